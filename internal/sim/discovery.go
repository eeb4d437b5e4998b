package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
)

var discoverySection = section{
	name:  "discovery",
	title: "Task discovery — a morning menu, and a pick that never reaches the model",
	blurb: "Tuesday 09:00. The first Sentinel tick from sentinel.discovery_hour runs the daily task " +
		"discovery: one model call proposes a few things Raven could do, and the menu goes out through " +
		"the policy-gated dispatcher as written. The owner's reply \"2\" is caught by the decision " +
		"consumer at the top of the turn and executed there: the agent loop never sees it.",
	run: runDiscovery,
}

const postOfficeReply = "The post office on Mill Lane is open until 17:30 today; the parcel counter closes at 17:00."

func runDiscovery(ctx context.Context, e *env) error {
	e.clk.Set(at(1, 8, 50))
	menu := llm.Turn{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: jsonArgs(map[string]any{
		"title": "A few things I could do for you today:",
		"options": []map[string]any{
			{"title": "Draft Sam's birthday message", "reason": "the card is on today's list", "kind": "reply",
				"reply": "Draft: “Happy birthday, Sam! Dinner on Friday is on me.”"},
			{"title": "Post office opening hours", "reason": "you pick up a parcel after lunch", "kind": "reply", "reply": postOfficeReply},
			{"title": "Compare bank savings rates", "reason": "your 11:00 call is with the bank", "kind": "spawn",
				"task": "Compare current easy-access savings rates at the owner's bank and two competitors."},
		},
	})}}}
	planner := llm.NewScripted([]llm.Turn{
		menu,
		decision(map[string]any{"action": "skip", "reason": "the menu covers this morning", "proactivity_score": 0.1}),
	})
	model := llm.NewScripted([]llm.Turn{{Content: "Morning! Busy day — I'm here if you need me."}})
	rt, err := e.newRuntime(ctx, build{model: model, planner: planner})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	if _, err := e.turn(ctx, rt, "Morning — errands after lunch, then the bank."); err != nil {
		return err
	}

	e.clk.Set(at(1, 9, 0))
	s := &sentinelRun{e: e, rt: rt, sys: rt.Sentinel()}
	s.tick(ctx)
	pd, ok, err := rt.Sentinel().Pending.Active(ctx, owner)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("09:00: no discovery menu is open on %s", owner)
	}
	e.emit(Event{Kind: "discovery.menu", Label: "discovery", Text: fmt.Sprintf("menu %s open on %s: %d options, state %s", pd.ID, owner, len(pd.Options), pd.State),
		Why:  "the daily run shares the Sentinel's lifecycle; the menu passed the policy like any nudge and is posted raw, so its numbering survives",
		Data: map[string]any{"decision_id": pd.ID, "options": len(pd.Options), "state": pd.State}})

	// 09:04 — the owner answers with a number.
	e.clk.Set(at(1, 9, 4))
	agentCalls, plannerCalls := len(model.Requests()), len(planner.Requests())
	out, t, err := e.inbound(ctx, rt.Inbound(), "cli", "direct", "2")
	if err != nil {
		return err
	}
	if out != channels.Appended {
		return fmt.Errorf("the pick was dispatched as %s", out)
	}
	res, err := e.wait(ctx, "the pick's reply", t)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("the pick's turn: %w", res.Err)
	}
	if !strings.Contains(res.Reply, postOfficeReply) {
		return fmt.Errorf("the pick's reply was %q, not option 2", res.Reply)
	}
	if a, p := len(model.Requests())-agentCalls, len(planner.Requests())-plannerCalls; a != 0 || p != 0 {
		return fmt.Errorf("the pick reached a model (%d agent calls, %d planner calls)", a, p)
	}
	list, err := rt.Sentinel().Pending.List(ctx)
	if err != nil {
		return err
	}
	state := ""
	for _, d := range list {
		if d.ID == pd.ID {
			state = d.State
		}
	}
	if state != executor.StateDone {
		return fmt.Errorf("menu %s is %q after its pick succeeded, want %s", pd.ID, state, executor.StateDone)
	}
	e.emit(Event{Kind: "discovery.pick", Label: "consumer", Text: fmt.Sprintf("pick 2 “%s” executed before the agent loop: 0 model calls; menu %s → %s",
		pd.Options[1].Title, pd.ID, state),
		Why: "a number matches deterministically (no classifier call); the pick is the owner's answer, so the menu's own session cooldown " +
			"and topic quota do not hold it back, and the menu closes only once the pick succeeded",
		Data: map[string]any{"decision_id": pd.ID, "index": 2, "agent_calls": 0, "planner_calls": 0, "state": state}})
	return nil
}
