package sentinel

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// Routes recorded in TickOutcome.Route.
const (
	RouteSkip             = "skip"
	RouteFastPathQuiet    = "fast_path_quiet_hours"
	RouteFastPathDedup    = "fast_path_dedup"
	RouteScheduledFire    = "scheduled_fire"
	RouteDeadlineFallback = "deadline_fallback"
	RouteNudge            = "nudge"
	RouteInject           = "nudge_inject"
	RouteDefer            = "nudge_defer"
	RouteSpawn            = "spawn_agent"
	RouteError            = "error"
)

// TickOutcome is what one tick did.
type TickOutcome struct {
	Decision PlannerDecision `json:"decision"`
	// Result is nil when nothing was attempted (skip, fast path).
	Result  *executor.Result `json:"result,omitempty"`
	NudgeID string           `json:"nudge_id,omitempty"`
	Route   string           `json:"route"`
	Notes   []string         `json:"notes,omitempty"`
	// Verdict is the policy's answer when an executor asked it.
	Verdict *policy.Verdict `json:"verdict,omitempty"`
}

// Delivered reports whether the tick reached the owner (or started a spawn).
func (o TickOutcome) Delivered() bool { return o.Result != nil && o.Result.Delivered }

// AcceptanceSource is the feedback tracker's acceptance rate.
type AcceptanceSource interface {
	AcceptanceRate(window time.Duration) (rate float64, samples int)
}

// Tuner is the policy's adaptive multiplier.
type Tuner interface {
	ApplyAdaptiveTuning(rate float64, samples int) float64
}

// RunnerOptions are the Runner's collaborators. Only Assembler and Planner
// are required; every missing executor turns its route into a recorded,
// undelivered result.
type RunnerOptions struct {
	Assembler  *Assembler
	Planner    Decider
	Dispatcher *executor.NudgeDispatcher
	Injector   *executor.NudgeInjector
	Defer      *executor.DeferManager
	Spawn      *executor.ProactiveSpawn

	// PlanSlots returns the day's planned fires (the daily-plan producer).
	PlanSlots func(day time.Time) []PlanSlot
	// DeadlineFallback lets a planner outage blind-fire due high-priority
	// deadline slots through the policy.
	DeadlineFallback bool

	Feedback       AcceptanceSource
	Tuner          Tuner
	FeedbackWindow time.Duration // acceptance-rate window (default 7 days)
	// TrimFeedback runs once a day (the tracker's daily trim).
	TrimFeedback func(ctx context.Context) error

	// Discover runs task discovery: once a day from DiscoveryHour (local)
	// on the tick, and on demand (RunDiscovery). Nil disables both.
	Discover      func(ctx context.Context, pc PlannerContext) executor.Result
	DiscoveryHour int
	// NoDailyDiscovery turns the daily run off (sentinel.discovery=false)
	// while RunDiscovery still works.
	NoDailyDiscovery bool
	// DiscoveryRetry is the first backoff after a failed daily run
	// (default DefaultDiscoveryRetry); it doubles per failure up to
	// DefaultDiscoveryRetryMax, for at most DiscoveryAttempts runs a day
	// (default DefaultDiscoveryAttempts).
	DiscoveryRetry    time.Duration
	DiscoveryAttempts int

	// State persists the once-a-day guards (discovery, fired plan slots)
	// in the shared state file, so a restart or a `raven sentinel tick`
	// beside a gateway does not repeat them. Nil keeps them in memory.
	State executor.Store

	// Refresh updates the derived state files (attention.md) before the
	// context is assembled, so the planner reads this tick's signals.
	Refresh func(ctx context.Context)

	// TickLogPath is sentinel/ticks.jsonl; empty disables the tick log.
	TickLogPath string
	// OnTick observes every tick's record (the gateway's event log). It
	// must not block.
	OnTick func(TickRecord)

	Interval time.Duration // default 1800s
	DedupTTL time.Duration // default 2h

	Clock  clock.Clock
	Logger *slog.Logger
}

// Runner defaults.
const (
	DefaultInterval       = 1800 * time.Second
	DefaultDedupTTL       = 2 * time.Hour
	DefaultFeedbackWindow = 7 * 24 * time.Hour
	// A failed daily discovery (model down, menu denied, no session yet)
	// is retried after 15m, 30m, 1h, 2h, 2h…, at most five runs a day:
	// enough to ride out an outage, never a menu loop.
	DefaultDiscoveryRetry    = 15 * time.Minute
	DefaultDiscoveryRetryMax = 2 * time.Hour
	DefaultDiscoveryAttempts = 5
)

// RunnerSection is the runner's section of state.json.
const RunnerSection = "runner"

// runnerState is what must survive a restart: the day discovery last ran
// and the plan slots fired today.
type runnerState struct {
	// LastDiscovery is the day a discovery last completed (delivered a
	// menu or found nothing worth proposing).
	LastDiscovery string `json:"last_discovery,omitempty"`
	// DiscoveryDay, DiscoveryAttempts and DiscoveryNext track today's
	// failed runs: how many, and when the next may start.
	DiscoveryDay      string            `json:"discovery_day,omitempty"`
	DiscoveryAttempts int               `json:"discovery_attempts,omitempty"`
	DiscoveryNext     time.Time         `json:"discovery_next,omitzero"`
	FiredSlots        map[string]string `json:"fired_slots,omitempty"` // slot ID -> local day
}

// Runner drives the Sentinel: assemble, fast paths, plan, route.
type Runner struct {
	o   RunnerOptions
	clk clock.Clock
	log *slog.Logger

	tickMu      sync.Mutex // one tick at a time (loop, triggers, CLI)
	skipSig     uint64
	skipAt      time.Time
	lastTrimDay string
	mem         runnerState // the guards when no State store is set

	loopMu sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewRunner returns a runner.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Assembler == nil || opts.Planner == nil {
		return nil, fmt.Errorf("sentinel: runner needs an assembler and a planner")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.DedupTTL <= 0 {
		opts.DedupTTL = DefaultDedupTTL
	}
	if opts.FeedbackWindow <= 0 {
		opts.FeedbackWindow = DefaultFeedbackWindow
	}
	if opts.DiscoveryRetry <= 0 {
		opts.DiscoveryRetry = DefaultDiscoveryRetry
	}
	if opts.DiscoveryAttempts <= 0 {
		opts.DiscoveryAttempts = DefaultDiscoveryAttempts
	}
	return &Runner{o: opts, clk: opts.Clock, log: opts.Logger}, nil
}

// TickOnce assembles the context and runs one tick.
func (r *Runner) TickOnce(ctx context.Context) (out TickOutcome) {
	defer r.recoverTick(&out)
	if r.o.Refresh != nil {
		safe(r.log, "refresh", func() { r.o.Refresh(ctx) })
	}
	pc := r.o.Assembler.Assemble(ctx)
	return r.TickWithContext(ctx, pc)
}

// TickWithContext runs one tick on pc. It never panics and never fails:
// every failure becomes a recorded skip or an undelivered result.
func (r *Runner) TickWithContext(ctx context.Context, pc PlannerContext) (out TickOutcome) {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	defer func() { r.logTick(out) }()
	defer r.recoverTick(&out)

	now := r.clk.Now()
	if pc.Now.IsZero() {
		pc.Now = now
	}
	r.maintain(ctx, now)
	r.maybeDiscover(ctx, pc, now)

	slots := r.dueSlots(ctx, now)
	if d, slot, ok := r.scheduledFire(slots); ok {
		d.At = now
		r.o.Assembler.RememberLastDecision(d)
		out = r.route(ctx, d, pc)
		out.Route = RouteScheduledFire
		if out.Delivered() {
			r.markFired(ctx, now, slot.ID)
		}
		return out
	}
	for _, s := range slots {
		if s.Deadline || !s.Recurring {
			pc.DueDeadlines = append(pc.DueDeadlines, s)
		}
	}

	if d, route, ok := r.fastPath(pc, now); ok {
		d.At = now
		r.o.Assembler.RememberLastDecision(d)
		return TickOutcome{Decision: d, Route: route}
	}

	d := r.o.Planner.Decide(ctx, pc)
	d.At = now
	var slotNote string
	if d.SlotID != "" && !offered(pc.DueDeadlines, d.SlotID) {
		slotNote = fmt.Sprintf("planner named slot %q, which was not offered; ignored", d.SlotID)
		r.log.Warn("sentinel: planner named a plan slot that was not offered", "slot", d.SlotID)
		d.SlotID = ""
	}
	if d.ProviderError && r.o.DeadlineFallback {
		due := r.unsentDeadlines(ctx, pc, now)
		if fb, slot, ok := fallbackDeadline(due); ok {
			fb.At = now
			r.log.Warn("sentinel: planner unavailable; firing high-priority deadline through the policy", "slot", slot.ID, "planner_reason", d.Reason)
			r.o.Assembler.RememberLastDecision(fb)
			out = r.route(ctx, fb, pc)
			out.Route = RouteDeadlineFallback
			out.Notes = append(out.Notes, "planner: "+d.Reason)
			if out.Delivered() {
				r.markFired(ctx, now, slot.ID)
			}
			return out
		}
	}
	out = r.route(ctx, d, pc)
	if slotNote != "" {
		out.Notes = append(out.Notes, slotNote)
	}
	r.settleDeadlines(ctx, &out, pc.DueDeadlines, now)
	if d.Action == ActionSkip && !d.ProviderError {
		r.skipSig, r.skipAt = contextSignature(pc), now
	} else {
		r.skipSig, r.skipAt = 0, time.Time{}
	}
	r.o.Assembler.RememberLastDecision(d)
	return out
}

func (r *Runner) recoverTick(out *TickOutcome) {
	if p := recover(); p != nil {
		r.log.Error("sentinel: tick panicked; recorded as skip", "panic", p, "stack", string(debug.Stack()))
		*out = TickOutcome{Decision: Skip(fmt.Sprintf("runner_error: panic: %v", p)), Route: RouteError}
	}
}

// maintain runs the daily feedback trim and the per-tick adaptive retune.
func (r *Runner) maintain(ctx context.Context, now time.Time) {
	if r.o.TrimFeedback != nil && r.lastTrimDay != dayKey(now) {
		r.lastTrimDay = dayKey(now)
		if err := r.o.TrimFeedback(ctx); err != nil {
			r.log.Warn("sentinel: feedback trim failed", "err", err)
		}
	}
	if r.o.Feedback != nil && r.o.Tuner != nil {
		rate, n := r.o.Feedback.AcceptanceRate(r.o.FeedbackWindow)
		r.o.Tuner.ApplyAdaptiveTuning(rate, n)
	}
}

func (r *Runner) maybeDiscover(ctx context.Context, pc PlannerContext, now time.Time) {
	if r.o.Discover == nil || r.o.NoDailyDiscovery || now.Hour() < r.o.DiscoveryHour {
		return
	}
	// A menu made in quiet hours is denied there: the model call would be
	// wasted (and the failed run retried). The day's run waits for the
	// first tick after them, as the planner does.
	if pc.NudgePolicyState.InQuietHours {
		return
	}
	today := dayKey(now)
	claimed, attempt := false, 0
	// The claim sets the next retry time before the run, so a process
	// that dies mid-run (or a peer ticking meanwhile) cannot start a
	// second run at once.
	if err := r.updateState(ctx, func(st *runnerState) bool {
		if st.LastDiscovery == today {
			return false
		}
		if st.DiscoveryDay != today {
			st.DiscoveryDay, st.DiscoveryAttempts, st.DiscoveryNext = today, 0, time.Time{}
		}
		if st.DiscoveryAttempts >= r.o.DiscoveryAttempts || now.Before(st.DiscoveryNext) {
			return false
		}
		st.DiscoveryAttempts++
		attempt, claimed = st.DiscoveryAttempts, true
		st.DiscoveryNext = now.Add(r.discoveryBackoff(attempt))
		return true
	}); err != nil {
		// Without the guard a discovery could run twice; skipping it
		// until the state is readable again is the quieter failure.
		r.log.Warn("sentinel: discovery guard unavailable; discovery skipped", "err", err)
		return
	}
	if !claimed {
		return
	}
	res := r.o.Discover(ctx, pc)
	if discoveryDone(res) {
		r.markDiscovered(ctx, today)
		r.log.Info("sentinel: task discovery ran", "attempt", attempt, "delivered", res.Delivered, "note", res.Note)
		return
	}
	msg := "sentinel: task discovery failed; retrying later today"
	if attempt >= r.o.DiscoveryAttempts {
		msg = "sentinel: task discovery failed; no more attempts today"
	}
	r.log.Warn(msg, "attempt", attempt, "of", r.o.DiscoveryAttempts, "retry_after", r.discoveryBackoff(attempt),
		"layer", res.Verdict.Layer, "reason", res.Verdict.Reason, "err", res.Error)
}

// discoveryDone reports whether a run settled the day: it delivered a
// menu, or found nothing worth proposing. An error or a denied menu is
// retried.
func discoveryDone(res executor.Result) bool {
	return res.Delivered || (res.Error == "" && res.Verdict.Layer == "" && res.Note != "")
}

func (r *Runner) discoveryBackoff(attempt int) time.Duration {
	d, ceiling := r.o.DiscoveryRetry, max(DefaultDiscoveryRetryMax, r.o.DiscoveryRetry)
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

func (r *Runner) markDiscovered(ctx context.Context, day string) {
	if err := r.updateState(context.WithoutCancel(ctx), func(st *runnerState) bool {
		st.LastDiscovery = day
		return true
	}); err != nil {
		r.log.Warn("sentinel: discovery not recorded; it may run again today", "err", err)
	}
}

// RunDiscovery runs task discovery now regardless of the daily guard (the
// operator asked). A run that delivers a menu counts as today's, so the
// daily one does not send a second.
func (r *Runner) RunDiscovery(ctx context.Context) executor.Result {
	if r.o.Discover == nil {
		return executor.Result{Error: "task discovery is not configured (it needs a model)"}
	}
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	res := r.o.Discover(ctx, r.o.Assembler.Assemble(ctx))
	if res.Delivered {
		r.markDiscovered(ctx, dayKey(r.clk.Now()))
	}
	// Logged here because a gateway runs it from a trigger, where nobody
	// else sees the result.
	if res.Delivered || (res.Error == "" && res.Verdict.Layer == "") {
		r.log.Info("sentinel: task discovery run on request", "delivered", res.Delivered, "nudge_id", res.NudgeID, "note", res.Note)
	} else {
		r.log.Warn("sentinel: task discovery run on request did not deliver", "layer", res.Verdict.Layer, "reason", res.Verdict.Reason, "err", res.Error)
	}
	return res
}

func dayKey(t time.Time) string { return t.Format("2006-01-02") }

// updateState applies fn to the persisted guards (or the in-memory ones
// without a store); fn reports whether it changed anything.
func (r *Runner) updateState(ctx context.Context, fn func(*runnerState) bool) error {
	if r.o.State == nil {
		fn(&r.mem)
		return nil
	}
	return r.o.State.Update(ctx, func(tx *statefile.Tx) error {
		var st runnerState
		if _, err := tx.Get(RunnerSection, &st); err != nil {
			return err
		}
		if !fn(&st) {
			return nil
		}
		return tx.Put(RunnerSection, st)
	})
}

// firedToday is the set of slot IDs already fired on now's day.
func (r *Runner) firedToday(ctx context.Context, now time.Time) map[string]bool {
	st := r.mem
	if r.o.State != nil {
		st = runnerState{}
		if err := r.o.State.View(ctx, func(tx *statefile.Tx) error {
			_, err := tx.Get(RunnerSection, &st)
			return err
		}); err != nil {
			r.log.Warn("sentinel: fired plan slots unreadable; assuming none fired", "err", err)
		}
	}
	today := dayKey(now)
	fired := map[string]bool{}
	for id, day := range st.FiredSlots {
		if day == today {
			fired[id] = true
		}
	}
	return fired
}

// markFired records slot id as fired on now's day, dropping other days.
func (r *Runner) markFired(ctx context.Context, now time.Time, id string) {
	today := dayKey(now)
	if err := r.updateState(context.WithoutCancel(ctx), func(st *runnerState) bool {
		for k, d := range st.FiredSlots {
			if d != today {
				delete(st.FiredSlots, k)
			}
		}
		if st.FiredSlots == nil {
			st.FiredSlots = map[string]string{}
		}
		st.FiredSlots[id] = today
		return true
	}); err != nil {
		r.log.Warn("sentinel: fired plan slot not recorded; it may fire again today", "slot", id, "err", err)
	}
}

// dueSlots are today's slots whose window contains now and that have not
// fired today.
func (r *Runner) dueSlots(ctx context.Context, now time.Time) []PlanSlot {
	if r.o.PlanSlots == nil {
		return nil
	}
	var slots []PlanSlot
	safe(r.log, "plan_slots", func() { slots = r.o.PlanSlots(now) })
	var due []PlanSlot
	var fired map[string]bool
	for _, s := range slots {
		if !s.Due(now) {
			continue
		}
		if fired == nil {
			fired = r.firedToday(ctx, now)
		}
		if !fired[s.ID] {
			due = append(due, s)
		}
	}
	return due
}

// scheduledFire picks the first due recurring slot: it fires without an
// LLM call. One-shot deadline slots are left to the planner.
func (r *Runner) scheduledFire(due []PlanSlot) (PlannerDecision, PlanSlot, bool) {
	for _, s := range due {
		if s.Recurring && !s.Deadline && strings.TrimSpace(s.Message) != "" {
			return slotDecision(s, "scheduled_fire: recurring slot "+s.ID), s, true
		}
	}
	return PlannerDecision{}, PlanSlot{}, false
}

func slotDecision(s PlanSlot, reason string) PlannerDecision {
	topic := s.Topic
	if topic == "" {
		topic = s.ID
	}
	return PlannerDecision{
		Action: ActionNudge, Reason: reason, Priority: orLow(s.Priority), ProactivityScore: 1,
		TargetSession: s.TargetSession, NudgeMessage: s.Message, Topic: topic, SlotID: s.ID,
	}
}

// unsentDeadlines drops the due deadline slots whose topic already fired
// today — the planner reminded about it before the slot opened, or a cron
// job did — and marks them fired, so the outage fallback never repeats a
// reminder the owner already has.
func (r *Runner) unsentDeadlines(ctx context.Context, pc PlannerContext, now time.Time) []PlanSlot {
	var out []PlanSlot
	for _, s := range pc.DueDeadlines {
		if topicFiredToday(pc.FireHistory, s, now) {
			r.markFired(ctx, now, s.ID)
			continue
		}
		out = append(out, s)
	}
	return out
}

func topicFiredToday(hist map[string]policy.TopicHistory, s PlanSlot, now time.Time) bool {
	for _, t := range []string{s.ID, s.Topic, policy.DeriveTopic(s.Message)} {
		if h, ok := hist[t]; ok && t != "" && !h.LastFired.IsZero() && dayKey(h.LastFired.In(now.Location())) == dayKey(now) {
			return true
		}
	}
	return false
}

// fallbackDeadline picks a due high-priority deadline slot. Only those may
// be blind-fired: during an outage nobody can judge the rest.
func fallbackDeadline(due []PlanSlot) (PlannerDecision, PlanSlot, bool) {
	for _, s := range due {
		if s.Priority == PriorityHigh && strings.TrimSpace(s.Message) != "" {
			return slotDecision(s, "deadline_fallback: planner unavailable, high-priority deadline "+s.ID), s, true
		}
	}
	return PlannerDecision{}, PlanSlot{}, false
}

// settleDeadlines marks deadline slots the decision acted on, and warns
// about due deadlines this tick did not deliver.
func (r *Runner) settleDeadlines(ctx context.Context, out *TickOutcome, due []PlanSlot, now time.Time) {
	for _, s := range due {
		if actsOn(out.Decision, s) && (out.Delivered() || (out.Result != nil && out.Result.Queued)) {
			r.markFired(ctx, now, s.ID)
			continue
		}
		r.log.Warn("sentinel: due deadline not fired this tick", "slot", s.ID, "priority", s.Priority, "until", s.End, "action", out.Decision.Action, "reason", out.Decision.Reason)
		out.Notes = append(out.Notes, "due deadline not fired: "+s.ID)
	}
}

// offered reports whether id is one of the due slots shown to the planner.
func offered(due []PlanSlot, id string) bool {
	for _, s := range due {
		if s.ID == id {
			return true
		}
	}
	return false
}

// actsOn reports whether d covers slot s: it names the slot, or it is on
// the slot's topic as the policy tags it (explicit, or derived from the
// message the same way the policy derives it).
func actsOn(d PlannerDecision, s PlanSlot) bool {
	if d.SlotID != "" {
		return d.SlotID == s.ID
	}
	if !d.Action.IsNudge() && d.Action != ActionSpawnAgent {
		return false
	}
	topic := d.Topic
	if topic == "" {
		content := d.NudgeMessage
		if d.Action == ActionSpawnAgent {
			content = d.SpawnTask
		}
		topic = policy.DeriveTopic(content)
	}
	return topic == s.ID || (s.Topic != "" && topic == s.Topic) || topic == policy.DeriveTopic(s.Message)
}

// fastPath returns a skip that makes the planner call pointless.
func (r *Runner) fastPath(pc PlannerContext, now time.Time) (PlannerDecision, string, bool) {
	if pc.NudgePolicyState.InQuietHours && !hasHighDeadline(pc.DueDeadlines) {
		return Skip("fast_path: quiet hours " + pc.NudgePolicyState.QuietHours), RouteFastPathQuiet, true
	}
	if last := pc.LastDecision; last != nil && last.Action == ActionSkip && r.skipSig != 0 &&
		now.Sub(r.skipAt) < r.o.DedupTTL && contextSignature(pc) == r.skipSig {
		return Skip("fast_path: context unchanged since the last skip"), RouteFastPathDedup, true
	}
	return PlannerDecision{}, "", false
}

func hasHighDeadline(due []PlanSlot) bool {
	for _, s := range due {
		if s.Priority == PriorityHigh {
			return true
		}
	}
	return false
}

// contextSignature hashes what makes a new decision worth asking for:
// memory, the history tail and the active session keys.
func contextSignature(pc PlannerContext) uint64 {
	h := fnv.New64a()
	h.Write([]byte(pc.MemoryMD))
	h.Write([]byte{0})
	h.Write([]byte(pc.HistoryMDRecent))
	for _, s := range pc.ActiveSessions {
		h.Write([]byte{0})
		h.Write([]byte(s.Key))
	}
	for _, s := range pc.DueDeadlines {
		h.Write([]byte{1})
		h.Write([]byte(s.ID))
	}
	sum := h.Sum64()
	if sum == 0 {
		sum = 1
	}
	return sum
}

// route runs the executor for d.
func (r *Runner) route(ctx context.Context, d PlannerDecision, pc PlannerContext) TickOutcome {
	out := TickOutcome{Decision: d, Route: string(d.Action)}
	if d.Action == ActionSkip || !d.Action.Valid() {
		out.Route = RouteSkip
		return out
	}
	session := d.TargetSession
	if session == "" && (d.Action == ActionNudgeInject || d.Action == ActionNudgeDefer) && len(pc.ActiveSessions) > 0 {
		session = pc.ActiveSessions[0].Key
		out.Notes = append(out.Notes, "target session defaulted to "+session)
	}
	n := executor.Nudge{Message: d.NudgeMessage, Session: session, Priority: policy.Priority(orLow(d.Priority)), Topic: d.Topic, Reason: d.Reason}
	missing := func(what string) executor.Result {
		return executor.Result{Verdict: policy.Verdict{Layer: executor.LayerInput, Reason: what + " is not configured"}}
	}
	var res executor.Result
	switch d.Action {
	case ActionNudge:
		n.Action = policy.ActionNudge
		if r.o.Dispatcher == nil {
			res = missing("the nudge dispatcher")
		} else {
			res = r.o.Dispatcher.Dispatch(ctx, n)
		}
	case ActionNudgeInject:
		n.Action = policy.ActionInject
		if r.o.Injector == nil {
			res = missing("the nudge injector")
		} else {
			res = r.o.Injector.Queue(ctx, n)
		}
	case ActionNudgeDefer:
		n.Action = policy.ActionDefer
		if r.o.Defer == nil {
			res = missing("the defer manager")
		} else {
			res = r.o.Defer.Register(ctx, n, d.DeferCondition)
		}
	case ActionSpawnAgent:
		if r.o.Spawn == nil {
			res = missing("the spawner")
		} else {
			res = r.o.Spawn.Dispatch(ctx, executor.SpawnRequest{Task: d.SpawnTask, Session: d.TargetSession, Priority: n.Priority, Topic: d.Topic, Reason: d.Reason})
		}
	}
	out.Result = &res
	out.NudgeID = res.NudgeID
	v := res.Verdict
	out.Verdict = &v
	if res.Note != "" {
		out.Notes = append(out.Notes, res.Note)
	}
	if !v.Allow {
		r.log.Info("sentinel: decision denied", "action", d.Action, "layer", v.Layer, "reason", v.Reason)
	}
	return out
}

// Start runs the tick loop and the defer loop until ctx ends or Stop is
// called. The first tick runs at once: a fresh start must not wait a whole
// interval (30 minutes by default) before the Sentinel looks at anything.
// Operator triggers are drained by the gateway, which calls TickOnce and
// RunDiscovery.
func (r *Runner) Start(ctx context.Context) {
	r.loopMu.Lock()
	defer r.loopMu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			r.TickOnce(ctx)
			if clock.Sleep(ctx, r.clk, r.o.Interval) != nil {
				return
			}
		}
	}()
	if r.o.Defer != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.o.Defer.Run(ctx)
		}()
	}
}

// Stop ends the loops and waits for them.
func (r *Runner) Stop() {
	r.loopMu.Lock()
	cancel := r.cancel
	r.cancel = nil
	r.loopMu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.wg.Wait()
}
