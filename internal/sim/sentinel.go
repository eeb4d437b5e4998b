package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/spine"
)

var sentinelSection = section{
	name:  "sentinel",
	title: "Sentinel day — nudge, inject, defer, spawn, quiet hours, feedback",
	blurb: "Every tick the Sentinel's planner (a scripted model here) picks one of five actions. " +
		"Each nudge passes the one shared NudgePolicy gate (the default policy) and goes where the " +
		"runtime's one target resolver says: here the owner's attached terminal, cli:direct. " +
		"The owner's feedback retunes how often Raven may speak up.",
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
	passport := "By the way: the passport office closes at 16:00 today and your renewal form is still unsent."
	planner := []llm.Turn{
		nudgeDecision("nudge", "plumber", "Morning! The plumber comes Thursday at 10:00 — want me to text him the side-gate code on Wednesday evening?",
			"Thursday appointment in the notes; nothing planned for it yet", nil),
		nudgeDecision("nudge_inject", "passport", passport,
			"deadline today, but the owner is chatting: ride along on the next reply instead of interrupting", nil),
		// The next tick proposes the same inject again, before it rode a reply.
		nudgeDecision("nudge_inject", "passport", passport, "deadline today; still not mentioned", nil),
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
	plannerModel := llm.NewScripted(planner)
	rt, err := e.newRuntime(ctx, build{model: agentScript, planner: plannerModel})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	sys := rt.Sentinel()
	tracker := sys.Feedback
	fbTool := sys.FeedbackTool()
	s := &sentinelRun{e: e, rt: rt, sys: sys, fb: fbTool}
	startMult := sys.Policy.SnapshotState()
	e.emit(Event{Kind: "policy.state", Label: "policy", Text: fmt.Sprintf("start of day: %d nudges/day, %d/hour, quiet hours %s, multiplier %.2f",
		startMult.DayQuota, startMult.HourQuota, startMult.QuietHours, startMult.Multiplier),
		Data: map[string]any{"multiplier": startMult.Multiplier, "hour_quota": startMult.HourQuota}})

	// 08:55 the owner says good morning, so cli:direct is a known session.
	if _, err := e.turn(ctx, rt, "Good morning! I'll be around the house today."); err != nil {
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

	// 10:00 — nudge_inject: charged when queued, queued once, carried by the next reply.
	e.clk.Set(at(0, 10, 0))
	used := sys.Policy.SnapshotState().DayUsed
	out = s.tick(ctx)
	if out.Result == nil || !out.Result.Queued || out.NudgeID == "" {
		return fmt.Errorf("10:00 inject not queued: %+v", out)
	}
	if now := sys.Policy.SnapshotState().DayUsed; now != used+1 {
		return fmt.Errorf("queuing the inject charged %d fires, want 1", now-used)
	}
	e.emit(Event{Kind: "policy.charged", Label: "policy", Text: fmt.Sprintf("inject %s charged when queued: %d → %d of today's %d nudges",
		out.NudgeID, used, used+1, sys.Policy.SnapshotState().DayQuota),
		Why:  "the quota is reserved at queue time, so injects cannot pile up past it while waiting for a reply",
		Data: map[string]any{"nudge_id": out.NudgeID, "day_used_before": used, "day_used_after": used + 1}})
	e.clk.Set(at(0, 10, 3))
	again := s.tick(ctx)
	if again.Result == nil || !strings.Contains(again.Result.Note, "not queued twice") {
		return fmt.Errorf("10:03 the same inject was queued again: %+v", again)
	}
	if now := sys.Policy.SnapshotState().DayUsed; now != used+1 {
		return fmt.Errorf("the repeated inject was charged again (%d fires)", now-used)
	}
	e.clk.Set(at(0, 10, 5))
	reply, err := e.turn(ctx, rt, "What's the weather for my run at noon?")
	if err != nil {
		return err
	}
	if n := strings.Count(reply, "passport office"); n != 1 {
		return fmt.Errorf("the queued inject rode the reply %d times, want once", n)
	}
	e.emit(Event{Kind: "sentinel.injected", Label: "injector", Text: "appended the queued nudge to that reply: one copy, one message",
		Why:  "nudge_inject rides on the agent's next reply through a response modifier; it is re-checked by the policy as it rides",
		Data: map[string]any{"copies": 1, "nudge_id": out.NudgeID}})

	// 10:58 the owner starts a thread; 11:00 the planner defers a nudge.
	e.clk.Set(at(0, 10, 58))
	if _, err := e.turn(ctx, rt, "Draft a reply to Sam: yes to the offsite on the 12th."); err != nil {
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

	// 14:00 — spawn_agent: the digest comes back through the dispatcher.
	e.clk.Set(at(0, 14, 0))
	out = s.tick(ctx)
	if !out.Delivered() || out.NudgeID == "" {
		return fmt.Errorf("14:00 spawn not started: %+v", out)
	}
	digest, err := e.expect(ctx, "the spawned micro-agent's result", func(m spine.Message) bool {
		return strings.Contains(m.Content, "Friday trains to Leeds")
	})
	if err != nil {
		return err
	}
	if digest.Origin != spine.OriginSentinel || !digest.Proactive {
		return fmt.Errorf("the digest bypassed the dispatcher (origin %s)", digest.Origin)
	}
	// The dispatcher records the delivery after the post returned: wait for
	// that record, bounded like every other step.
	if err := s.e.eventually(ctx, func() error { return s.digestRecorded(ctx, out.NudgeID) }); err != nil {
		return err
	}

	// 23:30 — quiet hours: the tick does not even ask the planner.
	e.clk.Set(at(0, 23, 30))
	calls := len(plannerModel.Requests())
	out = s.tick(ctx)
	if out.Route != sentinel.RouteFastPathQuiet || len(plannerModel.Requests()) != calls {
		return fmt.Errorf("23:30 was not skipped by the quiet-hours fast path: %+v", out)
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
	e        *env
	rt       *runtime.Runtime
	deferred []executor.Result
	sys      *sentinel.System
	fb       *feedback.Tool
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
	case out.Route == sentinel.RouteFastPathQuiet:
		what = "quiet hours → skip on the fast path, the planner is not called (no model cost)"
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
	case out.Delivered() && slices.Contains(out.Result.Targets, runtime.OutboxChannel+":"+runtime.OutboxChatID):
		result = "policy ok → no surface can take it: kept in the outbox as nudge " + out.NudgeID
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

// pollDefer runs the defer manager once and reports how many it delivered;
// s.deferred keeps the poll's results.
func (s *sentinelRun) pollDefer(ctx context.Context) int {
	pend, _ := s.sys.Defer.Pending(ctx)
	s.e.hold()
	res := s.sys.Defer.Poll(ctx)
	s.deferred = res
	n := 0
	for _, r := range res {
		if r.Delivered {
			n++
		}
	}
	if len(res) == 0 && len(pend) > 0 {
		last, _ := s.rt.Sessions().LastActivity(ctx, pend[0].Nudge.Session)
		s.e.emit(Event{Kind: "sentinel.defer_wait", Label: "defer", Text: fmt.Sprintf("%s active %s ago → keep waiting",
			pend[0].Nudge.Session, fmtDur(s.e.clk.Now().Sub(last))),
			Why: fmt.Sprintf("a deferred nudge goes out once its session has been idle %s", fmtDur(s.e.cfg.Sentinel.DeferIdle.D()))})
	}
	for _, r := range res {
		if !r.Delivered && !r.Verdict.Allow {
			s.e.emit(Event{Kind: "sentinel.tick", Label: "defer", Text: "thread settled → deferred nudge: DENIED by policy layer " + r.Verdict.Layer,
				Why:  r.Verdict.Reason + " — the deferred nudge is kept and tried again until it expires",
				Data: map[string]any{"layer": r.Verdict.Layer, "route": "nudge_defer"}})
		}
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

// digestRecorded checks that the spawn's result went through the dispatcher:
// it is in the owner's session (the next turn sees it) and in the feedback
// log under the spawn's nudge id (the owner's verdict can find it).
func (s *sentinelRun) digestRecorded(ctx context.Context, nudgeID string) error {
	es, err := s.rt.Sessions().Since(ctx, s.e.clk.Now().Add(-time.Hour), 100)
	if err != nil {
		return err
	}
	inSession := false
	for _, en := range es {
		if en.Conversation == owner && strings.Contains(en.Content, "nudge_id="+nudgeID) && strings.Contains(en.Content, "Friday trains") {
			inSession = true
		}
	}
	if !inSession {
		return fmt.Errorf("the digest of %s is not in %s's session", nudgeID, owner)
	}
	rec, ok, err := s.sys.Feedback.Lookup(nudgeID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the digest of %s is not tracked for feedback", nudgeID)
	}
	s.e.emit(Event{Kind: "sentinel.spawn_result", Label: "dispatcher", Text: fmt.Sprintf("digest delivered as nudge %s: in %s's session, tracked for feedback (%s)", nudgeID, owner, rec.Action),
		Why:  "the micro-agent's result goes through the nudge dispatcher like any nudge, so the owner's next turn can refer to it and their verdict counts",
		Data: map[string]any{"nudge_id": nudgeID, "in_session": true, "tracked": true}})
	return nil
}
