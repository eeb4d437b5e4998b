package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// askTurns is a model that asks one question, then replies "done".
func askTurns() *llm.Scripted {
	return llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{Name: "ask_user",
			Arguments: `{"questions":[{"question":"Deploy the secret-plan?","choices":["yes","no"]}]}`}}},
		{Content: "done"},
	})
}

// askOnTUI attaches a watcher to tui:main, starts a turn there that asks,
// and returns once the question went out.
func askOnTUI(t *testing.T, g *Gateway) (*spine.Ticket, questions.ClarifyRequest) {
	t.Helper()
	watcher := newFakeNotifier()
	t.Cleanup(func() { close(watcher.done) })
	if err := g.attach(context.Background(), "tui:main", watcher); err != nil {
		t.Fatal(err)
	}
	tk, err := g.Runtime().Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "tui", ChatID: "main", Content: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-watcher.got:
		req, ok := n.params.(questions.ClarifyRequest)
		if n.method != api.NotifyClarifyRequest.Name() || !ok {
			t.Fatalf("first notification %+v", n)
		}
		return tk, req
	case <-time.After(10 * time.Second):
		t.Fatal("no clarify.request")
		return nil, questions.ClarifyRequest{}
	}
}

func waitTurn(t *testing.T, tk *spine.Ticket) spine.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := tk.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A TUI attaching while a question waits is shown it — only that TUI, with
// the budget left; another conversation's TUI is not.
func TestAttachResendsPendingQuestion(t *testing.T) {
	g, _ := startTestGateway(t, askTurns())
	tk, asked := askOnTUI(t, g)

	late, other := newFakeNotifier(), newFakeNotifier()
	defer close(late.done)
	defer close(other.done)
	if err := g.attach(context.Background(), "tui:other", other); err != nil {
		t.Fatal(err)
	}
	if err := g.attach(context.Background(), "tui:main", late); err != nil {
		t.Fatal(err)
	}
	got := late.notes()
	if len(got) != 1 || got[0].method != api.NotifyClarifyRequest.Name() {
		t.Fatalf("late attach got %+v", got)
	}
	req := got[0].params.(questions.ClarifyRequest)
	if req.Batch != asked.Batch || req.Question != asked.Question || req.TimeoutS <= 0 || req.TimeoutS > asked.TimeoutS {
		t.Fatalf("resent %+v, asked %+v", req, asked)
	}
	if n := other.notes(); len(n) != 0 {
		t.Fatalf("other conversation got %+v", n)
	}
	if err := g.Runtime().Broker().Reply("tui:main", questions.Response{Batch: asked.Batch, Label: "no"}); err != nil {
		t.Fatal(err)
	}
	waitTurn(t, tk)
	// Nothing pending any more: a new attach is not shown a question.
	again := newFakeNotifier()
	defer close(again.done)
	if err := g.attach(context.Background(), "tui:main", again); err != nil {
		t.Fatal(err)
	}
	if n := again.notes(); len(n) != 0 {
		t.Fatalf("attach after the answer got %+v", n)
	}
}

// The event log records a question's asking and ending, never its answer.
func TestClarifyEventsRecorded(t *testing.T) {
	g, _ := startTestGateway(t, askTurns())
	tk, asked := askOnTUI(t, g)
	if err := g.Runtime().Broker().Reply("tui:main", questions.Response{Batch: asked.Batch, Text: "hunter2-answer"}); err != nil {
		t.Fatal(err)
	}
	waitTurn(t, tk)
	ctx := context.Background()
	if err := g.Runtime().FlushEvents(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _, err := g.Runtime().Events().Tail(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, ev := range evs {
		if strings.Contains(string(ev.Payload), "hunter2") {
			t.Fatalf("event %s carries the answer: %s", ev.Kind, ev.Payload)
		}
		if ev.Kind != eventlog.KindClarifyRequested && ev.Kind != eventlog.KindClarifyResolved {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if ev.Conversation != "tui:main" || p["batch"] != asked.Batch || p["index"] != 0.0 || p["total"] != 1.0 {
			t.Fatalf("event %s %s %s", ev.Kind, ev.Conversation, ev.Payload)
		}
		p["kind"] = ev.Kind
		got = append(got, p)
	}
	if len(got) != 2 || got[0]["kind"] != eventlog.KindClarifyRequested || got[1]["kind"] != eventlog.KindClarifyResolved ||
		got[1]["status"] != "answered" {
		t.Fatalf("clarify events %v", got)
	}
}

// Shutdown does not wait out ask_user: the waiting turn is told the gateway
// is shutting down and finishes well inside the grace period.
func TestShutdownCancelsPendingQuestion(t *testing.T) {
	prov := askTurns()
	g, shutdown := startTestGateway(t, prov)
	tk, _ := askOnTUI(t, g)
	start := time.Now()
	shutdown() // grace 10 s; the question's budget is 600 s
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	res := waitTurn(t, tk)
	if res.Err != nil || res.Reply != "done" {
		t.Fatalf("turn %+v", res)
	}
	reqs := prov.Requests()
	last := reqs[len(reqs)-1].Messages
	if tool := last[len(last)-1]; tool.Role != llm.RoleTool || !strings.Contains(tool.Content, "cancelled: the gateway is shutting down") {
		t.Fatalf("model read %+v", tool)
	}
}
