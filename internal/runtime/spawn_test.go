package runtime

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// A spawn_agent decision's result goes through the dispatcher (ISSUE8
// §2.10): it reaches the owner's surface, is logged for feedback under the
// spawn's nudge id, and is written into the owner's session, so the next
// turn's model request carries the digest.
func TestSpawnResultReachesOwnersSessionAndFeedback(t *testing.T) {
	defer goleak.VerifyNone(t)
	prov := llm.NewScripted([]llm.Turn{
		{Content: "Digest: 3 unread, one from the landlord about Friday."},
		{Content: "The landlord wrote about Friday."},
	})
	planner := plannerSays(`{"action":"spawn_agent","spawn_task":"summarise my unread mail",` +
		`"target_session":"cli:local","priority":"high","proactivity_score":0.9,"reason":"inbox piling up","topic":"mail"}`)
	a, _ := newApp(t, false, prov, func(o *Options) { o.PlannerProvider = planner })
	defer a.Close(context.Background())
	ctx := context.Background()
	got := make(chan spine.Message, 4)
	if _, err := a.Attach(ctx, "cli:local", SurfaceFunc(func(_ context.Context, m spine.Message) error { got <- m; return nil })); err != nil {
		t.Fatal(err)
	}
	sys := a.Sentinel()
	out := sys.Runner.TickOnce(ctx)
	if !out.Delivered() {
		t.Fatalf("spawn not started: %+v", out.Record())
	}
	msg := <-got
	if !strings.Contains(msg.Content, "Digest: 3 unread") || msg.Origin != spine.OriginSentinel || !msg.Proactive {
		t.Fatalf("owner got %+v", msg)
	}
	nudgeID := out.Result.NudgeID
	var rec feedback.Record
	eventually(t, "the spawn result in the owner's session", func() bool {
		ms, err := a.Sessions().Recent(ctx, "cli:local", 10)
		if err != nil || len(ms) == 0 {
			return false
		}
		return strings.Contains(ms[len(ms)-1].Content, "nudge_id="+nudgeID)
	})
	ns, err := sys.Feedback.Nudges(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.NudgeID == nudgeID {
			rec = n.Record
		}
	}
	if rec.Action != policy.ActionSpawn || rec.Session != "cli:local" || !strings.Contains(rec.Content, "Digest") {
		t.Fatalf("spawn result not tracked for feedback under %s: %+v", nudgeID, ns)
	}

	turn(t, a, "anything from the landlord?")
	reqs := prov.Requests()
	var history []string
	for _, m := range reqs[len(reqs)-1].Messages {
		history = append(history, m.Content)
	}
	if joined := strings.Join(history, "\n"); !strings.Contains(joined, "Digest: 3 unread") {
		t.Fatalf("the next turn does not see the digest:\n%s", joined)
	}
}

// plannerProvider is the Sentinel's model in tests: the planner gets one
// fixed decision, task discovery the menu given (none: nothing proposed).
type plannerProvider struct {
	decision string
	menu     string
}

func plannerSays(decision string) *plannerProvider { return &plannerProvider{decision: decision} }

func (p *plannerProvider) Name() string { return "test/planner" }

func (p *plannerProvider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	for _, tl := range req.Tools {
		switch {
		case tl.Name == sentinel.PlannerToolName && p.decision != "":
			return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "p1", Name: tl.Name, Arguments: p.decision}}, FinishReason: "tool_calls"}, nil
		case tl.Name != sentinel.PlannerToolName && p.menu != "":
			return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "d1", Name: tl.Name, Arguments: p.menu}}, FinishReason: "tool_calls"}, nil
		}
	}
	return &llm.Response{Content: "nothing today", FinishReason: "stop"}, nil
}
