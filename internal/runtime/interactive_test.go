package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/spine"
)

// A channel reply that arrives after ask_user timed out is told it expired
// once and then becomes an ordinary new turn; it never answers anything.
func TestLateChannelAnswerIsToldItExpired(t *testing.T) {
	a, clk := newSentinelApp(t, false, []llm.Turn{
		{ToolCalls: []llm.ToolCall{{ID: "q1", Name: "ask_user", Arguments: `{"questions":[{"question":"Monday or Tuesday?","choices":["Monday","Tuesday"]}]}`}}},
		{Content: "You did not answer; nothing booked."},
		{Content: "Booking Tuesday then."},
		{Content: "You're welcome."},
	})
	defer a.Close(context.Background())
	out := make(chan spine.Message, 16)
	a.Hub().Register("telegram", spine.OutletFunc(func(ctx context.Context, m spine.Message) error { out <- m; return nil }))
	d := a.Inbound()
	ctx := context.Background()
	msg := func(text string) (channels.Outcome, *spine.Ticket) {
		t.Helper()
		o, tk, err := d.Dispatch(ctx, spine.TurnRequest{Channel: "telegram", ChatID: "42", Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return o, tk
	}
	_, first := msg("book the boiler service")
	if q := <-out; !strings.Contains(q.Content, "Monday or Tuesday?") {
		t.Fatalf("question not rendered on the channel: %q", q.Content)
	}
	clk.BlockUntil(1)
	clk.Advance(a.Config().Tools.AskUser.Timeout.D())
	if r, _ := first.Wait(ctx); r.Reply != "You did not answer; nothing booked." {
		t.Fatalf("timed-out turn = %+v", r)
	}
	<-out // the reply

	o, late := msg("2")
	if o != channels.Appended || late == nil {
		t.Fatalf("late answer outcome = %v, want a new turn", o)
	}
	if n := <-out; !strings.Contains(n.Content, "expired") {
		t.Fatalf("late answer not told it expired: %q", n.Content)
	}
	if r, _ := late.Wait(ctx); r.Reply != "Booking Tuesday then." {
		t.Fatalf("late message turn = %+v", r)
	}
	<-out
	// Told once: the next message is ordinary, with no second notice.
	o, tk := msg("thanks")
	if o != channels.Appended {
		t.Fatalf("outcome = %v", o)
	}
	tk.Wait(ctx)
	if m := <-out; m.Content != "You're welcome." {
		t.Fatalf("expected only the reply, got %q", m.Content)
	}
	select {
	case m := <-out:
		t.Fatalf("unexpected extra message %q", m.Content)
	default:
	}
}

// blockTool is a tool whose run waits for release, to hold a turn open.
type blockTool struct{ started, release chan struct{} }

func (blockTool) Name() string               { return "block" }
func (blockTool) Description() string        { return "waits" }
func (blockTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (b blockTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	b.started <- struct{}{}
	<-b.release
	return "waited", nil
}

// A menu pick that arrives while a turn runs is consumed before it can be
// injected into that turn: the pick never reaches the model.
func TestMenuPickMidTurnIsNotInjected(t *testing.T) {
	prov := llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{ID: "b1", Name: "block", Arguments: `{}`}}},
		{Content: "done"},
	})
	a, _ := newApp(t, false, prov)
	defer a.Close(context.Background())
	ctx := context.Background()
	bt := blockTool{started: make(chan struct{}, 1), release: make(chan struct{})}
	a.Tools().Register(bt)
	sys := a.Sentinel()
	replies := make(chan spine.Message, 4)
	a.Hub().Register("telegram", spine.OutletFunc(func(_ context.Context, m spine.Message) error { replies <- m; return nil }))
	d := a.Inbound()
	_, tk, err := d.Dispatch(ctx, spine.TurnRequest{Channel: "telegram", ChatID: "42", Content: "what's up?"})
	if err != nil {
		t.Fatal(err)
	}
	<-bt.started
	// The discovery menu goes out while the owner's turn is running.
	if _, err := sys.Pending.Put(ctx, executor.PendingDecision{Session: "telegram:42", Title: "Tonight?",
		Options: []executor.Option{{Title: "Order pizza", Kind: executor.KindReply, Reply: "Pizza it is."},
			{Title: "Cook pasta", Kind: executor.KindReply, Reply: "Pasta then."}}}); err != nil {
		t.Fatal(err)
	}
	out, _, err := d.Dispatch(ctx, spine.TurnRequest{Channel: "telegram", ChatID: "42", Content: "2"})
	if err != nil || out != channels.Hooked {
		t.Fatalf("mid-turn pick outcome = %v, %v; want hooked", out, err)
	}
	close(bt.release)
	if r, _ := tk.Wait(ctx); r.Reply != "done" {
		t.Fatalf("turn = %+v", r)
	}
	for _, req := range prov.Requests() {
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser && m.Content == "2" {
				t.Fatal("the pick reached the model")
			}
		}
	}
}
