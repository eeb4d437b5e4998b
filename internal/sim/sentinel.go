package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

var sentinelSection = section{
	name:  "sentinel",
	title: "Sentinel day — nudge, inject, defer, quiet hours, spawn, feedback",
	blurb: "Every tick the Sentinel's planner (a scripted model here) picks one of five actions. " +
		"Each nudge passes the one shared NudgePolicy gate before delivery and is charged only " +
		"after it was delivered; the owner's feedback retunes how often Raven may speak up.",
	run: runSentinel,
}

const owner = "cli:direct"

// decision is one scripted planner_decision tool call.
func decision(fields map[string]any) llm.Turn {
	return llm.Turn{ToolCalls: []llm.ToolCall{{Name: sentinel.PlannerToolName, Arguments: jsonArgs(fields)}}}
}

func nudgeDecision(action, topic, msg, reason string, extra map[string]any) llm.Turn {
	f := map[string]any{"action": action, "reason": reason, "proactivity_score": 0.7, "priority": "medium",
		"target_session": owner, "topic": topic}
	if msg != "" {
		f["nudge_message"] = msg
	}
	for k, v := range extra {
		f[k] = v
	}
	return decision(f)
}

// feedbackDays are later nudges the owner waves away, one a day at
// different hours (so no hour becomes a learned do-not-disturb hour).
var feedbackDays = []struct {
	day, hour          int
	topic, msg, reason string
	ownerResponse      string
}{
	{1, 9, "plants", "The balcony plants haven't been watered since Friday.", "watering noted in history four days ago", "not now"},
	{2, 12, "newsletter", "Your weekly newsletter draft is due tomorrow.", "deadline tomorrow in MEMORY.md", "I know, stop"},
	{3, 17, "gym", "You usually go to the gym on Thursdays around now.", "learned routine: gym on Thursdays", "skip it"},
	{4, 13, "podcast", "A new episode of your favourite podcast is out.", "interest noted in attention.md", "no thanks"},
}

func runSentinel(ctx context.Context, e *env) error {
	e.clk.Set(at(0, 8, 55))
	planner := []llm.Turn{
		nudgeDecision("nudge", "plumber", "Morning! The plumber comes Thursday at 10:00 — want me to text him the side-gate code on Wednesday evening?",
			"Thursday appointment in the notes; nothing planned for it yet", nil),
		nudgeDecision("nudge_inject", "passport", "By the way: the passport office closes at 16:00 today and your renewal form is still unsent.",
			"deadline today, but the owner is chatting: ride along on the next reply instead of interrupting", nil),
		nudgeDecision("nudge_defer", "dentist", "When you have a minute: the dentist asked you to confirm Friday 15:00.",
			"useful but not urgent; the owner is in the middle of a thread",
			map[string]any{"defer_condition": "after the current thread settles"}),
		nudgeDecision("spawn_agent", "trains", "", "Friday's trip to Leeds has no train picked yet; this is multi-step research",
			map[string]any{"spawn_task": "Compare Friday morning trains to Leeds arriving before 10:00."}),
	}
	for _, d := range feedbackDays {
		planner = append(planner, nudgeDecision("nudge", d.topic, d.msg, d.reason, nil))
	}
	planner = append(planner, decision(map[string]any{"action": "skip", "reason": "nothing new since the weekend", "proactivity_score": 0.1}))

	agentScript := llm.NewScripted([]llm.Turn{
		{Content: "Good morning! Shout if you need anything."},
		{Content: "Sunny and 14°C at noon with a light wind — good running weather."},
		{Content: "Draft: “Hi Sam — yes, count me in for the offsite on the 12th. See you there!”"},
		// The spawned micro-agent.
		{Content: "Friday trains to Leeds: 07:03 → 09:14 direct (£38), 07:33 → 09:41 with one change (£29)."},
	})
	app, err := e.newApp(ctx, agentScript, "cli")
	if err != nil {
		return err
	}
	sys, err := sentinel.NewSystem(sentinel.SystemOptions{
		Paths: e.paths, Config: e.cfg.Sentinel, Provider: llm.NewScripted(planner),
		Post:         app.Hub.Post,
		Sessions:     app.Sessions.Active,
		LastActivity: app.Sessions.LastActivity,
		Spawn: func(ctx context.Context, task, ch, chat string) error {
			_, err := app.Subagents.Spawn(ctx, task, ch, chat)
			return err
		},
		PlanSlots: func(day time.Time) []sentinel.PlanSlot {
			d := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
			return []sentinel.PlanSlot{{ID: "evening-journal", Topic: "journal", Recurring: true, TargetSession: owner,
				Start: d.Add(23*time.Hour + 15*time.Minute), End: d.Add(23*time.Hour + 59*time.Minute),
				Message: "Time for your evening journal?"}}
		},
		Clock: e.clk, Logger: e.log,
	})
	if err != nil {
		return err
	}
	tracker := sys.Feedback
	app.Agent.AddResponseModifier(sys.Injector.Modify)
	// As in the gateway: an inject is charged only once its reply went out.
	app.OnTurnDone(func(r spine.TurnRequest, res spine.Result) {
		sys.Injector.SettleTurn(r, res.Err == nil && res.Delivered)
	})
	fbTool := sys.FeedbackTool()
	s := &sentinelRun{e: e, app: app, sys: sys, fb: fbTool}
	startMult := sys.Policy.SnapshotState()
	e.emit(Event{Kind: "policy.state", Label: "policy", Text: fmt.Sprintf("start of day: %d nudges/day, %d/hour, quiet hours %s, multiplier %.2f",
		startMult.DayQuota, startMult.HourQuota, startMult.QuietHours, startMult.Multiplier),
		Data: map[string]any{"multiplier": startMult.Multiplier, "hour_quota": startMult.HourQuota}})

	// 08:55 the owner says good morning, so cli:direct is a known session.
	if _, err := e.turn(ctx, app, "Good morning! I'll be around the house today."); err != nil {
		return err
	}

	// 09:00 — a plain nudge.
	e.clk.Set(at(0, 9, 0))
	out := s.tick(ctx)
	if !out.Delivered() || out.NudgeID == "" {
		return fmt.Errorf("09:00 nudge not delivered: %+v", out)
	}
	plumberNudge := out.NudgeID
	e.clk.Advance(3 * time.Minute)
	if err := s.feedback(ctx, plumberNudge, feedback.EventAccepted, "Yes please, good idea!"); err != nil {
		return err
	}

	// 10:00 — nudge_inject: queued, then carried by the next reply.
	e.clk.Set(at(0, 10, 0))
	out = s.tick(ctx)
	if out.Result == nil || !out.Result.Queued {
		return fmt.Errorf("10:00 inject not queued: %+v", out)
	}
	e.clk.Set(at(0, 10, 5))
	reply, err := e.turn(ctx, app, "What's the weather for my run at noon?")
	if err != nil {
		return err
	}
	if !strings.Contains(reply, "passport office") {
		return errors.New("the queued inject did not ride on the next reply")
	}
	e.emit(Event{Kind: "sentinel.injected", Label: "injector", Text: "appended the queued nudge to that reply (one message, not two)",
		Why: "nudge_inject rides on the agent's next reply through a response modifier; its fire is charged only now"})

	// 10:58 the owner starts a thread; 11:00 the planner defers a nudge.
	e.clk.Set(at(0, 10, 58))
	if _, err := e.turn(ctx, app, "Draft a reply to Sam: yes to the offsite on the 12th."); err != nil {
		return err
	}
	e.clk.Set(at(0, 11, 0))
	out = s.tick(ctx)
	if out.Result == nil || !out.Result.Queued {
		return fmt.Errorf("11:00 defer not queued: %+v", out)
	}
	if n := s.pollDefer(ctx); n != 0 {
		return errors.New("deferred nudge went out while the owner was active")
	}
	e.clk.Set(at(0, 11, 9))
	if n := s.pollDefer(ctx); n != 1 {
		return fmt.Errorf("deferred nudge not dispatched after the thread settled (%d)", n)
	}

	// 14:00 — spawn_agent.
	e.clk.Set(at(0, 14, 0))
	out = s.tick(ctx)
	if !out.Delivered() {
		return fmt.Errorf("14:00 spawn not started: %+v", out)
	}
	if _, err := e.expect(ctx, "the spawned micro-agent's result", func(m spine.Message) bool { return m.Origin == spine.OriginSubagent }); err != nil {
		return err
	}

	// 23:30 — the day plan's journal prompt is due, but it is quiet hours.
	e.clk.Set(at(0, 23, 30))
	out = s.tick(ctx)
	if out.Verdict == nil || out.Verdict.Allow || out.Verdict.Layer != policy.LayerQuietHours {
		return fmt.Errorf("23:30 was not denied by quiet hours: %+v", out)
	}

	// The rest of the week: nudges the owner waves away.
	e.tl.note("The rest of the week, compressed: one nudge a day, each dismissed by the owner.")
	for _, d := range feedbackDays {
		e.clk.Set(at(d.day, d.hour, 0))
		before := sys.Policy.SnapshotState().Multiplier
		out := s.tick(ctx)
		if !out.Delivered() {
			return fmt.Errorf("%s nudge not delivered: %+v", d.topic, out)
		}
		s.multiplierMoved(before)
		e.clk.Advance(2 * time.Minute)
		if err := s.feedback(ctx, out.NudgeID, feedback.EventDismissed, d.ownerResponse); err != nil {
			return err
		}
	}
	e.tl.note("A week later, Monday's first tick retunes the policy from the week's feedback.")
	e.clk.Set(at(7, 9, 0))
	before := sys.Policy.SnapshotState()
	s.tick(ctx)
	after := sys.Policy.SnapshotState()
	if after.Multiplier >= before.Multiplier {
		return fmt.Errorf("multiplier did not tighten after feedback: %.2f → %.2f", before.Multiplier, after.Multiplier)
	}
	rate, n := tracker.AcceptanceRate(e.cfg.Sentinel.FeedbackWindow.D())
	e.emit(Event{Kind: "policy.multiplier", Label: "policy", Text: fmt.Sprintf("multiplier %.2f → %.2f: hour quota %d → %d",
		before.Multiplier, after.Multiplier, before.HourQuota, after.HourQuota),
		Why: fmt.Sprintf("acceptance %.0f%% over %d verdicts this week; few samples yet, so it tightens only to the cold-start floor",
			rate*100, n),
		Data: map[string]any{"before": before.Multiplier, "after": after.Multiplier, "hour_quota_before": before.HourQuota,
			"hour_quota_after": after.HourQuota, "acceptance_rate": rate, "samples": n}})
	return nil
}

type sentinelRun struct {
	e   *env
	app *gateway.App
	sys *sentinel.System
	fb  *feedback.Tool
}

// tick runs one Sentinel tick and prints what it decided and why, then the
// deliveries it caused.
func (s *sentinelRun) tick(ctx context.Context) sentinel.TickOutcome {
	s.e.hold()
	out := s.sys.Runner.TickOnce(ctx)
	d := out.Decision
	ev := Event{Kind: "sentinel.tick", Label: "sentinel", Why: d.Reason,
		Data: map[string]any{"action": string(d.Action), "route": out.Route, "nudge_id": out.NudgeID, "topic": d.Topic}}
	var what string
	switch {
	case out.Route == sentinel.RouteScheduledFire:
		what = "day-plan slot due → nudge " + quote(d.NudgeMessage)
	case d.Action == sentinel.ActionSpawnAgent:
		what = "planner → spawn_agent " + quote(d.SpawnTask)
	case d.Action == sentinel.ActionSkip:
		what = "planner → skip"
	default:
		what = "planner → " + string(d.Action)
	}
	var result string
	switch {
	case out.Verdict != nil && !out.Verdict.Allow:
		result = "DENIED by policy layer " + out.Verdict.Layer
		ev.Data["layer"] = out.Verdict.Layer
		ev.Why = out.Verdict.Reason
		if out.Route == sentinel.RouteScheduledFire {
			ev.Why = "a scheduled slot skips the planner, but never the policy: " + out.Verdict.Reason
		}
	case out.Result != nil && out.Result.Queued:
		result = "queued"
		if d.Action == sentinel.ActionNudgeDefer {
			ev.Why = fmt.Sprintf("%s — it waits until %s has been idle %s (and expires after %s)", d.Reason,
				d.TargetSession, fmtDur(s.e.cfg.Sentinel.DeferIdle.D()), fmtDur(s.e.cfg.Sentinel.DeferMaxWait.D()))
		} else if out.Result.Note != "" {
			ev.Why = d.Reason + " — " + out.Result.Note
		}
	case d.Action == sentinel.ActionSpawnAgent && out.Delivered():
		result = "policy ok (spawn quota) → micro-agent started, nudge " + out.NudgeID
	case out.Delivered():
		result = "policy ok → delivered as nudge " + out.NudgeID
	case out.Result != nil:
		result = "not delivered: " + out.Result.Error
	}
	if result != "" {
		what += ": " + result
	}
	ev.Text = what
	s.e.emit(ev)
	s.e.release()
	return out
}

// pollDefer runs the defer manager once and reports what it dispatched.
func (s *sentinelRun) pollDefer(ctx context.Context) int {
	pend, _ := s.sys.Defer.Pending(ctx)
	s.e.hold()
	res := s.sys.Defer.Poll(ctx)
	n := 0
	for _, r := range res {
		if r.Delivered {
			n++
		}
	}
	if n == 0 && len(pend) > 0 {
		last, _ := s.app.Sessions.LastActivity(ctx, pend[0].Nudge.Session)
		s.e.emit(Event{Kind: "sentinel.defer_wait", Label: "defer", Text: fmt.Sprintf("%s active %s ago → keep waiting",
			pend[0].Nudge.Session, fmtDur(s.e.clk.Now().Sub(last))),
			Why: fmt.Sprintf("a deferred nudge goes out once its session has been idle %s", fmtDur(s.e.cfg.Sentinel.DeferIdle.D()))})
	}
	for _, r := range res {
		if r.Delivered {
			s.e.emit(Event{Kind: "sentinel.defer_dispatch", Label: "defer", Text: "thread settled → dispatching deferred nudge " + r.NudgeID,
				Why:  "idle threshold passed; the policy was checked again at dispatch time",
				Data: map[string]any{"nudge_id": r.NudgeID}})
		}
	}
	s.e.release()
	return n
}

// feedback records the owner's verdict through the nudge_feedback tool.
func (s *sentinelRun) feedback(ctx context.Context, id, verdict, said string) error {
	args := jsonArgs(map[string]any{"verdict": verdict, "nudge_id": id, "reason": said})
	out, err := s.fb.Run(feedback.WithSession(ctx, owner), []byte(args))
	if err != nil {
		return err
	}
	s.e.emit(Event{Kind: "sentinel.feedback", Label: "feedback", Text: fmt.Sprintf("owner: %s → %s", quote(said), out),
		Data: map[string]any{"nudge_id": id, "verdict": verdict}})
	return nil
}

func (s *sentinelRun) multiplierMoved(before float64) {
	if now := s.sys.Policy.SnapshotState().Multiplier; now != before {
		s.e.emit(Event{Kind: "policy.multiplier", Label: "policy", Text: fmt.Sprintf("multiplier %.2f → %.2f", before, now)})
	}
}
