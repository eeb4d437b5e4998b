package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

var outboxSection = section{
	name:  "outbox",
	title: "Nothing lost — the outbox keeps what nobody was there to see",
	blurb: "Friday evening. The owner closes the terminal; no phone channel is configured. A Sentinel " +
		"nudge and a cron reminder find no surface that can take them, so the target resolver's last " +
		"resort keeps them durably in the outbox (raven.db). When the owner attaches again, both are " +
		"shown first, oldest first, exactly once.",
	run: runOutbox,
}

const (
	parcelNudge = "Your parcel was left with the neighbour at no. 12."
	mumMsg      = "Call Mum back about Sunday lunch."
)

func runOutbox(ctx context.Context, e *env) error {
	e.clk.Set(at(4, 17, 55))
	model := llm.NewScripted([]llm.Turn{
		{Content: "Enjoy your evening!"},
		// The cron reminder's turn.
		{Content: "Reminder: call Mum back about Sunday lunch."},
	})
	planner := llm.NewScripted([]llm.Turn{nudgeDecision("nudge", "parcel", parcelNudge, "delivery note in today's history", nil)})
	rt, err := e.newRuntime(ctx, build{model: model, planner: planner})
	if err != nil {
		return err
	}
	detach, err := e.attach(ctx, rt, owner, nil)
	if err != nil {
		return err
	}
	if _, err := e.turn(ctx, rt, "I'm off for the evening — closing the laptop."); err != nil {
		return err
	}
	e.clk.Set(at(4, 18, 0))
	detach()
	e.emit(Event{Kind: "surface.detached", Label: "owner", Text: "closes the terminal: nothing is attached to cli:direct any more",
		Why: "the resolver sends a proactive message to an attached surface, else channels.forward, else the most recent real channel — " +
			"none of them exists now, and an ephemeral surface nobody watches is never a target"})

	// 18:30 — a Sentinel nudge with nobody there.
	e.clk.Set(at(4, 18, 30))
	s := &sentinelRun{e: e, rt: rt, sys: rt.Sentinel()}
	out := s.tick(ctx)
	want := spine.ConversationKey(runtime.OutboxChannel, runtime.OutboxChatID)
	if !out.Delivered() || !slices.Contains(out.Result.Targets, want) {
		return fmt.Errorf("18:30 nudge not kept in the outbox: %+v", out)
	}
	if err := e.noteOutbox(ctx, rt, 1, "the nudge counts as delivered (it will be shown) and is charged once; nothing was posted to a window nobody watches"); err != nil {
		return err
	}

	// 19:00 — a cron reminder with nobody there.
	j, err := addJob(ctx, e, rt, cron.Spec{Name: "mum", Message: mumMsg, Cron: "0 19 * * 5", TZ: "UTC", Deliver: true, Channel: "cli", To: "direct"})
	if err != nil {
		return err
	}
	e.clk.Set(at(4, 19, 0))
	run, err := rt.FireCron(ctx, j.ID)
	if err != nil {
		return err
	}
	e.emit(Event{Kind: "cron.fired", Label: "cron", Text: fmt.Sprintf("fired %q → %s", j.Name, run.Outcome),
		Data: map[string]any{"job": j.Name, "status": string(run.Outcome)}})
	if run.Outcome != cron.StatusDelivered {
		return fmt.Errorf("the cron reminder ended %s, want delivered (to the outbox)", run.Outcome)
	}
	if err := e.noteOutbox(ctx, rt, 2, "the reminder's turn ran and its reply was kept, not dropped as undelivered"); err != nil {
		return err
	}

	// 21:30 — the owner opens the terminal again.
	e.clk.Set(at(4, 21, 30))
	e.emit(Event{Kind: "surface.attached", Label: "owner", Text: "opens the terminal: raven chat attaches to cli:direct"})
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	var shown []string
	for len(shown) < 2 {
		m, err := e.expect(ctx, "the outbox items on attach", func(m spine.Message) bool { return m.Proactive })
		if err != nil {
			return err
		}
		shown = append(shown, m.Content)
	}
	if shown[0] != parcelNudge || shown[1] != "Reminder: call Mum back about Sunday lunch." {
		return fmt.Errorf("shown on attach: %q", shown)
	}
	n, err := rt.Outbox().Count(ctx)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("%d items still wait in the outbox after they were shown", n)
	}
	e.emit(Event{Kind: "outbox.delivered", Label: "outbox", Text: fmt.Sprintf("%d kept messages shown on attach, oldest first; 0 left", len(shown)),
		Why:  "AttachOwner drains the outbox into the surface that just attached, marking each item delivered once shown (raven inbox lists what waits)",
		Data: map[string]any{"count": len(shown), "left": n}})
	return nil
}

// noteOutbox checks and prints how many items wait in the outbox.
func (e *env) noteOutbox(ctx context.Context, rt *runtime.Runtime, want int, why string) error {
	ctx, cancel := context.WithTimeout(ctx, e.step)
	defer cancel()
	n, err := rt.Outbox().Count(ctx)
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%d items in the outbox, want %d", n, want)
	}
	e.emit(Event{Kind: "outbox.queued", Label: "outbox", Text: fmt.Sprintf("kept in the outbox (%d waiting)", n), Why: why,
		Data: map[string]any{"waiting": n}})
	return nil
}
