package gateway

import (
	"context"
	"testing"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
)

// A `cron add --deliver` reminder fired by the gateway (default config)
// while no TUI or chat is attached is kept in the outbox, not dropped
// undelivered; the next chat.attach is shown it, once, with the marker.
func TestCronDeliveryKeptForNextAttach(t *testing.T) {
	g, _ := startTestGateway(t, llm.NewScripted([]llm.Turn{{Content: "Stand up and stretch."}, {Content: "Stretch again."}}))
	rt := g.Runtime()
	ctx := context.Background()
	job, err := cron.NewJob(cron.Spec{Name: "stretch", Message: "remind me to stretch", Every: "1h", Deliver: true}, rt.Clock().Now())
	if err != nil {
		t.Fatal(err)
	}
	if job, err = rt.CronStore().Add(ctx, job); err != nil {
		t.Fatal(err)
	}
	run, err := rt.FireCron(ctx, job.ID)
	if err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("fire = %+v, %v", run, err)
	}
	st, err := g.status(ctx)
	if err != nil || st.OutboxPending != 1 {
		t.Fatalf("status = %+v, %v; want one item waiting", st, err)
	}

	tui := newFakeNotifier()
	defer close(tui.done)
	if err := g.attach(ctx, "tui:main", tui); err != nil {
		t.Fatal(err)
	}
	notes := tui.notes()
	if len(notes) != 1 || notes[0].method != api.NotifyChatMessage.Name() {
		t.Fatalf("attach got %+v", notes)
	}
	if m := notes[0].params.(channels.ChatMessage); m.Content != "Stand up and stretch." || !m.Proactive || m.Conversation != "tui:main" {
		t.Fatalf("shown %+v", m)
	}
	later := newFakeNotifier()
	defer close(later.done)
	if err := g.attach(ctx, "tui:other", later); err != nil {
		t.Fatal(err)
	}
	if n := later.notes(); len(n) != 0 {
		t.Fatalf("a second attach was shown it again: %+v", n)
	}
	if st, _ := g.status(ctx); st.OutboxPending != 0 {
		t.Fatalf("still waiting after the attach: %+v", st)
	}

	// With the TUI attached, the next fire of the same cli job reaches it
	// live (it is the surface the owner is at), not the outbox.
	if run, err := rt.FireCron(ctx, job.ID); err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("second fire = %+v, %v", run, err)
	}
	live := later.notes()
	if len(live) != 1 || live[0].params.(channels.ChatMessage).Content != "Stretch again." {
		t.Fatalf("the attached TUI got %+v", live)
	}
	if st, _ := g.status(ctx); st.OutboxPending != 0 {
		t.Fatalf("a fire with a TUI attached went to the outbox: %+v", st)
	}
}
