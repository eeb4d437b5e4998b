package sentinel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeGate struct {
	mu     sync.Mutex
	deny   policy.Verdict // Layer set → deny
	checks []policy.Request
	fired  []policy.Request
}

func (g *fakeGate) Check(_ context.Context, r policy.Request) policy.Verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks = append(g.checks, r)
	if g.deny.Layer != "" {
		return g.deny
	}
	return policy.Verdict{Allow: true}
}

func (g *fakeGate) RecordFired(_ context.Context, r policy.Request) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fired = append(g.fired, r)
	return "n-" + string(rune('a'+len(g.fired)-1)), nil
}

// scriptedDecider returns decisions in order (the last repeats).
type scriptedDecider struct {
	mu    sync.Mutex
	ds    []PlannerDecision
	calls int
	panic bool
}

func (s *scriptedDecider) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *scriptedDecider) Decide(context.Context, PlannerContext) PlannerDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.panic {
		panic("planner exploded")
	}
	return s.ds[min(s.calls-1, len(s.ds)-1)]
}

type harness struct {
	clk    *clock.Fake
	gate   *fakeGate
	posted []spine.Message
	runner *Runner
	dec    *scriptedDecider
	store  *statefile.Store
	dir    string
	mu     sync.Mutex
}

func (h *harness) msgs() []spine.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]spine.Message(nil), h.posted...)
}

func newHarness(t *testing.T, dec *scriptedDecider, mod func(*RunnerOptions)) *harness {
	t.Helper()
	h := &harness{clk: clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)), gate: &fakeGate{}, dec: dec, dir: t.TempDir()}
	st, err := statefile.Open(filepath.Join(h.dir, "state.json"), statefile.Options{Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	disp := executor.NewDispatcher(executor.DispatcherOptions{Gate: h.gate, Clock: h.clk, Post: func(_ context.Context, m spine.Message) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.posted = append(h.posted, m)
		return nil
	}, Targets: func(s string) []executor.Target {
		if s == "" {
			return []executor.Target{{Channel: "telegram", ChatID: "42"}}
		}
		return nil
	}})
	inj, err := executor.NewInjector(executor.InjectorOptions{Store: st, Gate: h.gate, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := executor.NewDeferManager(executor.DeferOptions{Store: st, Gate: h.gate, Dispatch: disp.Dispatch, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	sp := executor.NewSpawn(executor.SpawnOptions{Gate: h.gate, Spawn: func(context.Context, string, string, string) error { return nil }})
	opts := RunnerOptions{
		Assembler: NewAssembler(AssemblerOptions{Clock: h.clk}), Planner: dec,
		Dispatcher: disp, Injector: inj, Defer: dm, Spawn: sp,
		TickLogPath: filepath.Join(h.dir, "ticks.jsonl"), Clock: h.clk, DeadlineFallback: true,
	}
	if mod != nil {
		mod(&opts)
	}
	r, err := NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.runner = r
	return h
}

func skipDecision() PlannerDecision { return Skip("nothing to do") }

func TestRunnerQuietHoursFastPath(t *testing.T) {
	dec := &scriptedDecider{ds: []PlannerDecision{skipDecision()}}
	h := newHarness(t, dec, nil)
	pc := PlannerContext{Now: h.clk.Now(), NudgePolicyState: policy.Snapshot{Now: h.clk.Now(), InQuietHours: true, QuietHours: "23:00-07:00"}}
	out := h.runner.TickWithContext(context.Background(), pc)
	if out.Route != RouteFastPathQuiet || out.Decision.Action != ActionSkip || dec.calls != 0 {
		t.Fatalf("route %q action %q planner calls %d", out.Route, out.Decision.Action, dec.calls)
	}
	if last, ok := h.runner.o.Assembler.LastDecision(); !ok || !strings.Contains(last.Reason, "quiet hours") {
		t.Fatalf("last decision not remembered: %+v", last)
	}
}

func TestRunnerDedupTTL(t *testing.T) {
	dec := &scriptedDecider{ds: []PlannerDecision{skipDecision()}}
	h := newHarness(t, dec, func(o *RunnerOptions) { o.DedupTTL = time.Hour })
	ctx := context.Background()
	assemble := func(mem string) PlannerContext {
		pc := h.runner.o.Assembler.Assemble(ctx)
		pc.MemoryMD = mem
		return pc
	}
	steps := []struct {
		advance   time.Duration
		memory    string
		wantRoute string
		wantCalls int
	}{
		{0, "m1", RouteSkip, 1},
		{30 * time.Minute, "m1", RouteFastPathDedup, 1},
		{20 * time.Minute, "m1", RouteFastPathDedup, 1},
		{11 * time.Minute, "m1", RouteSkip, 2}, // TTL (1h since the skip) expired
		{time.Minute, "m1", RouteFastPathDedup, 2},
		{time.Minute, "m2", RouteSkip, 3}, // context changed
	}
	for i, s := range steps {
		h.clk.Advance(s.advance)
		out := h.runner.TickWithContext(ctx, assemble(s.memory))
		if out.Route != s.wantRoute || dec.calls != s.wantCalls {
			t.Fatalf("step %d: route %q calls %d, want %q %d", i, out.Route, dec.calls, s.wantRoute, s.wantCalls)
		}
	}
}

func deadlineSlots(prio Priority, recurring bool) func(time.Time) []PlanSlot {
	return func(day time.Time) []PlanSlot {
		start := time.Date(day.Year(), day.Month(), day.Day(), 9, 0, 0, 0, time.UTC)
		return []PlanSlot{{ID: "tax", Topic: "tax-return", Start: start, End: start.Add(3 * time.Hour), Deadline: !recurring, Recurring: recurring, Message: "Tax return is due today", Priority: prio}}
	}
}

func TestRunnerDeadlineFallback(t *testing.T) {
	outage := PlannerDecision{Action: ActionSkip, Reason: ReasonProviderError + ": down", ProviderError: true}
	tests := []struct {
		name          string
		prio          Priority
		fallback      bool
		decision      PlannerDecision
		deny          string
		wantRoute     string
		wantDelivered bool
		wantNote      bool
	}{
		{"high deadline fires on outage", PriorityHigh, true, outage, "", RouteDeadlineFallback, true, false},
		{"high deadline still passes the policy", PriorityHigh, true, outage, policy.LayerDayQuota, RouteDeadlineFallback, false, false},
		{"medium deadline is not blind-fired", PriorityMedium, true, outage, "", RouteSkip, false, true},
		{"fallback disabled", PriorityHigh, false, outage, "", RouteSkip, false, true},
		{"model chose skip: no fallback", PriorityHigh, true, Skip("already done"), "", RouteSkip, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dec := &scriptedDecider{ds: []PlannerDecision{tc.decision}}
			h := newHarness(t, dec, func(o *RunnerOptions) {
				o.PlanSlots = deadlineSlots(tc.prio, false)
				o.DeadlineFallback = tc.fallback
			})
			h.gate.deny = policy.Verdict{Layer: tc.deny, Reason: "denied"}
			out := h.runner.TickOnce(context.Background())
			if out.Route != tc.wantRoute || out.Delivered() != tc.wantDelivered {
				t.Fatalf("route %q delivered %v, want %q %v", out.Route, out.Delivered(), tc.wantRoute, tc.wantDelivered)
			}
			if dec.calls != 1 {
				t.Fatalf("deadline slot must go to the planner first; calls %d", dec.calls)
			}
			if len(h.gate.checks) > 0 && h.gate.checks[0].Priority != policy.PriorityHigh {
				t.Fatalf("fallback request priority %q", h.gate.checks[0].Priority)
			}
			hasNote := strings.Contains(strings.Join(out.Notes, "|"), "due deadline not fired")
			if hasNote != tc.wantNote {
				t.Fatalf("notes %v, want deadline warning %v", out.Notes, tc.wantNote)
			}
			if tc.wantDelivered && len(h.gate.fired) != 1 {
				t.Fatalf("fired %d, want 1", len(h.gate.fired))
			}
		})
	}
}

func TestRunnerScheduledRecurringFiresOncePerDay(t *testing.T) {
	dec := &scriptedDecider{ds: []PlannerDecision{skipDecision()}}
	h := newHarness(t, dec, func(o *RunnerOptions) { o.PlanSlots = deadlineSlots(PriorityLow, true) })
	ctx := context.Background()
	out := h.runner.TickOnce(ctx)
	if out.Route != RouteScheduledFire || !out.Delivered() || dec.calls != 0 {
		t.Fatalf("first: route %q delivered %v calls %d", out.Route, out.Delivered(), dec.calls)
	}
	if m := h.msgs(); len(m) != 1 || !m[0].Proactive || m[0].Origin != spine.OriginSentinel {
		t.Fatalf("posted %+v", m)
	}
	h.clk.Advance(30 * time.Minute)
	out = h.runner.TickOnce(ctx)
	if out.Route == RouteScheduledFire || dec.calls != 1 {
		t.Fatalf("second tick same day: route %q calls %d", out.Route, dec.calls)
	}
	h.clk.Advance(24 * time.Hour)
	if out = h.runner.TickOnce(ctx); out.Route != RouteScheduledFire {
		t.Fatalf("next day: route %q", out.Route)
	}
}

func TestRunnerRoutesActions(t *testing.T) {
	tests := []struct {
		d         PlannerDecision
		wantRoute string
		check     func(t *testing.T, h *harness, out TickOutcome)
	}{
		{PlannerDecision{Action: ActionNudge, NudgeMessage: "drink water", Priority: PriorityLow}, RouteNudge, func(t *testing.T, h *harness, out TickOutcome) {
			if !out.Delivered() || out.NudgeID == "" || len(h.msgs()) != 1 || h.msgs()[0].ChatID != "42" {
				t.Fatalf("nudge not delivered to default target: %+v %+v", out, h.msgs())
			}
		}},
		{PlannerDecision{Action: ActionNudgeInject, NudgeMessage: "btw: dentist at 3", TargetSession: "telegram:42"}, RouteInject, func(t *testing.T, h *harness, out TickOutcome) {
			if !out.Result.Queued || len(h.gate.fired) != 1 {
				t.Fatalf("inject: %+v fired %d (charged when queued)", out.Result, len(h.gate.fired))
			}
			got := h.runner.o.Injector.Modify("telegram:42", "Sure, done.")
			if got != "Sure, done.\n\nbtw: dentist at 3" || len(h.gate.fired) != 1 {
				t.Fatalf("modify = %q fired %d", got, len(h.gate.fired))
			}
			h.runner.o.Injector.Settle("telegram:42", true)
			if len(h.gate.fired) != 1 {
				t.Fatalf("delivered inject fired %d", len(h.gate.fired))
			}
		}},
		{PlannerDecision{Action: ActionNudgeDefer, NudgeMessage: "later", DeferCondition: "thread idle", TargetSession: "telegram:42"}, RouteDefer, func(t *testing.T, h *harness, out TickOutcome) {
			if !out.Result.Queued || len(h.msgs()) != 0 {
				t.Fatalf("defer: %+v", out.Result)
			}
		}},
		{PlannerDecision{Action: ActionSpawnAgent, SpawnTask: "digest my inbox", TargetSession: "telegram:42"}, RouteSpawn, func(t *testing.T, h *harness, out TickOutcome) {
			if !out.Delivered() || h.gate.checks[0].Action != policy.ActionSpawn || h.gate.checks[0].Content != "digest my inbox" {
				t.Fatalf("spawn: %+v %+v", out, h.gate.checks)
			}
		}},
		{Skip("meh"), RouteSkip, func(t *testing.T, h *harness, out TickOutcome) {
			if out.Result != nil || len(h.gate.checks) != 0 {
				t.Fatalf("skip touched executors")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.d.Action), func(t *testing.T) {
			h := newHarness(t, &scriptedDecider{ds: []PlannerDecision{tc.d}}, nil)
			out := h.runner.TickOnce(context.Background())
			if out.Route != tc.wantRoute {
				t.Fatalf("route %q, want %q", out.Route, tc.wantRoute)
			}
			tc.check(t, h, out)
			recs, err := ReadTicks(filepath.Join(h.dir, "ticks.jsonl"), 10)
			if err != nil || len(recs) != 1 || recs[0].Route != tc.wantRoute {
				t.Fatalf("tick log: %v %+v", err, recs)
			}
		})
	}
}

func TestRunnerDeniedIsLoggedWithLayer(t *testing.T) {
	h := newHarness(t, &scriptedDecider{ds: []PlannerDecision{{Action: ActionNudge, NudgeMessage: "x"}}}, nil)
	h.gate.deny = policy.Verdict{Layer: policy.LayerQuietHours, Reason: "quiet hours 23:00-07:00"}
	out := h.runner.TickOnce(context.Background())
	if out.Verdict == nil || out.Verdict.Allow || out.Delivered() || len(h.msgs()) != 0 {
		t.Fatalf("%+v", out)
	}
	recs, _ := ReadTicks(filepath.Join(h.dir, "ticks.jsonl"), 1)
	if len(recs) != 1 || recs[0].Layer != policy.LayerQuietHours || recs[0].Allowed == nil || *recs[0].Allowed {
		t.Fatalf("tick record %+v", recs)
	}
}

func TestRunnerRecoversPanic(t *testing.T) {
	h := newHarness(t, &scriptedDecider{panic: true}, nil)
	out := h.runner.TickOnce(context.Background())
	if out.Route != RouteError || out.Decision.Action != ActionSkip {
		t.Fatalf("%+v", out)
	}
}

type fakeFeedback struct {
	rate float64
	n    int
}

func (f fakeFeedback) AcceptanceRate(time.Duration) (float64, int) { return f.rate, f.n }

type fakeTuner struct{ got []float64 }

func (f *fakeTuner) ApplyAdaptiveTuning(r float64, n int) float64 {
	f.got = append(f.got, r, float64(n))
	return 1
}

func TestRunnerRetunesAndTrimsDaily(t *testing.T) {
	tuner := &fakeTuner{}
	trims := 0
	h := newHarness(t, &scriptedDecider{ds: []PlannerDecision{skipDecision()}}, func(o *RunnerOptions) {
		o.Feedback = fakeFeedback{0.8, 12}
		o.Tuner = tuner
		o.TrimFeedback = func(context.Context) error { trims++; return errors.New("disk full") }
	})
	for i := 0; i < 3; i++ {
		h.runner.TickOnce(context.Background())
		h.clk.Advance(time.Hour)
	}
	if len(tuner.got) != 6 || tuner.got[0] != 0.8 || tuner.got[1] != 12 {
		t.Fatalf("tuner calls %v", tuner.got)
	}
	if trims != 1 {
		t.Fatalf("trims %d, want 1 per day", trims)
	}
}

func TestRunnerLoop(t *testing.T) {
	dec := &scriptedDecider{ds: []PlannerDecision{skipDecision()}}
	ticks := make(chan TickRecord, 4)
	h := newHarness(t, dec, func(o *RunnerOptions) {
		o.Interval = 10 * time.Minute
		o.OnTick = func(r TickRecord) { ticks <- r }
	})
	h.runner.Start(context.Background())
	t.Cleanup(h.runner.Stop)
	if r := <-ticks; !r.Time.Equal(h.clk.Now()) {
		t.Fatalf("first tick at %v, want at start (%v)", r.Time, h.clk.Now())
	}
	h.clk.BlockUntil(2) // tick loop and defer loop asleep
	start := h.clk.Now()
	h.clk.Advance(10 * time.Minute)
	if r := <-ticks; !r.Time.Equal(start.Add(10 * time.Minute)) {
		t.Fatalf("second tick at %v, want one interval later", r.Time)
	}
	if n := dec.count(); n != 1 {
		t.Fatalf("planner calls %d, want 1 (the second tick is an unchanged-context skip)", n)
	}
	h.runner.Stop()
	if _, err := os.Stat(filepath.Join(h.dir, "ticks.jsonl")); err != nil {
		t.Fatal(err)
	}
}
