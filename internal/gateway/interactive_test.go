package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm"
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
	a.Hub.Register("telegram", spine.OutletFunc(func(ctx context.Context, m spine.Message) error { out <- m; return nil }))
	a.EnableAskUser(nil)
	d, err := a.NewDispatcher()
	if err != nil {
		t.Fatal(err)
	}
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
	clk.Advance(a.Config.Tools.AskUser.Timeout.D())
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
