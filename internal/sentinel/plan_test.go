package sentinel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/statefile"
)

// Tuesday 2025-03-04, UTC.
func tue(h, m int) time.Time { return time.Date(2025, 3, 4, h, m, 0, 0, time.UTC) }

func TestBuildPlan(t *testing.T) {
	item := func(at time.Time, timed bool, text string) attention.Item {
		return attention.Item{At: at, HasTime: timed, Text: text, Source: "memory"}
	}
	midnight := func(d int) time.Time { return time.Date(2025, 3, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name      string
		routines  []predictor.Routine
		deadlines []attention.Item
		want      []PlanSlot // ID and Message are checked for non-emptiness only
	}{
		{"daily routine around its usual time",
			[]predictor.Routine{{Description: "gym, workout", When: "daily ~10:00", Cadence: predictor.CadenceDaily, Minute: 600}}, nil,
			[]PlanSlot{{Start: tue(9, 30), End: tue(10, 30), Recurring: true, Priority: PriorityLow}}},
		{"weekly routine on another weekday",
			[]predictor.Routine{{Description: "choir", Cadence: predictor.CadenceWeekly, Weekdays: []time.Weekday{time.Thursday}, Minute: 1080}}, nil, nil},
		{"weekly routine on its weekday",
			[]predictor.Routine{{Description: "choir", Cadence: predictor.CadenceWeekly, Weekdays: []time.Weekday{time.Tuesday}, Minute: 1080}}, nil,
			[]PlanSlot{{Start: tue(17, 30), End: tue(18, 30), Recurring: true, Priority: PriorityLow}}},
		{"routine near midnight is clipped to the day",
			[]predictor.Routine{{Description: "journal", Cadence: predictor.CadenceWeekdays, Minute: 23*60 + 50}}, nil,
			[]PlanSlot{{Start: tue(23, 20), End: midnight(5), Recurring: true, Priority: PriorityLow}}},
		{"timed deadline today: high, before it is due", nil,
			[]attention.Item{item(tue(17, 0), true, "2025-03-04 17:00 file the tax return")},
			[]PlanSlot{{Start: tue(14, 0), End: tue(17, 0), Deadline: true, Priority: PriorityHigh}}},
		{"early deadline opens no later than the day start", nil,
			[]attention.Item{item(tue(10, 0), true, "call the bank")},
			[]PlanSlot{{Start: tue(9, 0), End: tue(10, 0), Deadline: true, Priority: PriorityHigh}}},
		{"untimed deadline today: the whole day", nil,
			[]attention.Item{item(midnight(4), false, "renew passport")},
			[]PlanSlot{{Start: tue(9, 0), End: tue(21, 0), Deadline: true, Priority: PriorityHigh}}},
		{"tomorrow's deadline: an evening heads-up, medium", nil,
			[]attention.Item{item(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC), true, "dentist")},
			[]PlanSlot{{Start: tue(18, 0), End: tue(21, 0), Deadline: true, Priority: PriorityMedium}}},
		{"overdue and later deadlines are not planned", nil,
			[]attention.Item{item(midnight(3), false, "old"), item(midnight(9), false, "later")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BuildPlan(tue(6, 0), time.UTC, tc.routines, tc.deadlines, PlanWindows{})
			if len(got) != len(tc.want) {
				t.Fatalf("got %d slots %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || g.Recurring != w.Recurring || g.Deadline != w.Deadline || g.Priority != w.Priority {
					t.Fatalf("slot %d = %+v, want %+v", i, g, w)
				}
				if g.ID == "" || g.Topic == "" || g.Message == "" {
					t.Fatalf("slot %d lacks id/topic/message: %+v", i, g)
				}
			}
			again := BuildPlan(tue(20, 0), time.UTC, tc.routines, tc.deadlines, PlanWindows{})
			for i := range got {
				if again[i].ID != got[i].ID {
					t.Fatal("slot IDs change within the day")
				}
			}
		})
	}
}

// capturingDecider records the planner context and returns d.
type capturingDecider struct {
	mu    sync.Mutex
	d     PlannerDecision
	calls int
	pcs   []PlannerContext
}

func (c *capturingDecider) Decide(_ context.Context, pc PlannerContext) PlannerDecision {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.pcs = append(c.pcs, pc)
	return c.d
}

func memoryPlan(memory string, routines []predictor.Routine) *DailyPlan {
	return NewDailyPlan(DailyPlanOptions{
		Routines:  func(string) []predictor.Routine { return routines },
		Deadlines: attention.Deadlines{},
		Input: func(context.Context) attention.Input {
			return attention.Input{Memory: memory, Location: time.UTC}
		},
		Location: time.UTC,
	})
}

// A learned routine becomes a recurring slot that fires without the
// planner, through the policy, once a day.
func TestDailyPlanRoutineFiresDirectly(t *testing.T) {
	dec := &capturingDecider{d: skipDecision()}
	plan := memoryPlan("", []predictor.Routine{{Description: "stretch", When: "daily ~10:00", Cadence: predictor.CadenceDaily, Minute: 600, Keywords: []string{"stretch"}}})
	h := newHarness(t, &scriptedDecider{ds: []PlannerDecision{skipDecision()}}, func(o *RunnerOptions) {
		o.Planner = dec
		o.PlanSlots = plan.Slots
	})
	out := h.runner.TickOnce(context.Background())
	if out.Route != RouteScheduledFire || !out.Delivered() || dec.calls != 0 {
		t.Fatalf("route %q delivered %v planner calls %d", out.Route, out.Delivered(), dec.calls)
	}
	if len(h.gate.checks) != 1 || h.gate.checks[0].Priority != policy.PriorityLow || len(h.gate.fired) != 1 {
		t.Fatalf("policy not consulted once at low priority: checks %+v fired %d", h.gate.checks, len(h.gate.fired))
	}
	if m := h.msgs(); len(m) != 1 || !strings.Contains(m[0].Content, "stretch") {
		t.Fatalf("posted %+v", m)
	}
	h.gate.deny = policy.Verdict{Layer: policy.LayerQuietHours, Reason: "quiet"}
	h.clk.Advance(24 * time.Hour)
	if out := h.runner.TickOnce(context.Background()); out.Route != RouteScheduledFire || out.Delivered() {
		t.Fatalf("next day, denied: route %q delivered %v", out.Route, out.Delivered())
	}
}

// A deadline due today becomes a one-shot slot handed to the planner.
func TestDailyPlanDeadlineGoesToPlanner(t *testing.T) {
	dec := &capturingDecider{d: skipDecision()}
	plan := memoryPlan("- 2025-03-04 17:00 file the tax return\n", nil)
	h := newHarness(t, nil, func(o *RunnerOptions) {
		o.Planner = dec
		o.PlanSlots = plan.Slots
	})
	h.clk.Set(tue(15, 0))
	out := h.runner.TickOnce(context.Background())
	if out.Route == RouteScheduledFire || dec.calls != 1 || len(h.msgs()) != 0 {
		t.Fatalf("route %q planner calls %d posted %d", out.Route, dec.calls, len(h.msgs()))
	}
	due := dec.pcs[0].DueDeadlines
	if len(due) != 1 || !due[0].Deadline || due[0].Priority != PriorityHigh || !strings.Contains(due[0].Message, "tax return") {
		t.Fatalf("due deadlines %+v", due)
	}
}

// When the planner errors, only the high-priority (due today) deadline
// slots are blind-fired, and through the policy.
func TestDailyPlanFallbackFiresOnlyHighDeadlines(t *testing.T) {
	outage := PlannerDecision{Action: ActionSkip, Reason: ReasonProviderError + ": down", ProviderError: true}
	tests := []struct {
		name      string
		memory    string
		wantRoute string
		wantMsg   string
	}{
		{"due today fires", "- 2025-03-04 renew passport\n- 2025-03-05 dentist\n", RouteDeadlineFallback, "Due today: 2025-03-04 renew passport"},
		{"due tomorrow (medium) does not", "- 2025-03-05 dentist\n", RouteSkip, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := memoryPlan(tc.memory, nil)
			h := newHarness(t, &scriptedDecider{ds: []PlannerDecision{outage}}, func(o *RunnerOptions) { o.PlanSlots = plan.Slots })
			h.clk.Set(tue(19, 0))
			out := h.runner.TickOnce(context.Background())
			if out.Route != tc.wantRoute || h.dec.calls != 1 {
				t.Fatalf("route %q planner calls %d", out.Route, h.dec.calls)
			}
			m := h.msgs()
			if tc.wantMsg == "" {
				if len(m) != 0 || len(h.gate.checks) != 0 {
					t.Fatalf("medium deadline blind-fired: %+v", m)
				}
				return
			}
			if len(m) != 1 || m[0].Content != tc.wantMsg || len(h.gate.checks) != 1 || h.gate.checks[0].Priority != policy.PriorityHigh {
				t.Fatalf("posted %+v checks %+v", m, h.gate.checks)
			}
		})
	}
}

// The plan is written into attention.md's own section, and the runner's
// slots come from the same computation.
func TestSystemWritesTodaysPlan(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		h := newSysHarness(t, func(c *Config) { c.Plan.Enabled = enabled })
		write(t, h.paths.Memory, "- 2025-03-04 18:00 send the invoice\n")
		h.prov.push(decisionJSON("skip", "", nil))
		h.sys.Runner.TickOnce(context.Background())
		b, err := os.ReadFile(h.paths.Attention)
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(string(b), "## "+attention.SectionPlan) && strings.Contains(string(b), "15:00–18:00 Due today at 18:00: 2025-03-04 18:00 send the invoice")
		if has != enabled || (h.sys.Plan != nil) != enabled {
			t.Fatalf("enabled=%v: section written %v, plan %v\n%s", enabled, has, h.sys.Plan != nil, b)
		}
		if enabled {
			slots := h.sys.Plan.Slots(h.clk.Now())
			if len(slots) != 1 || !slots[0].Deadline || slots[0].End != tue(18, 0) {
				t.Fatalf("slots %+v", slots)
			}
		}
	}
	if !DefaultConfig().Plan.Enabled {
		t.Fatal("sentinel.plan.enabled must default to true")
	}
}

// The once-a-day guards live in the shared state file: a restarted runner
// (or `raven sentinel tick` beside a gateway) neither reruns discovery nor
// refires a plan slot the same day.
func TestRunnerGuardsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	discoveries := 0
	slots := deadlineSlots(PriorityLow, true) // recurring 09:00-12:00
	newRunner := func(h *harness) *harness {
		st, err := statefile.Open(path, statefile.Options{Clock: h.clk})
		if err != nil {
			t.Fatal(err)
		}
		h.runner.o.State = st
		h.runner.o.Discover = func(context.Context, PlannerContext) executor.Result {
			discoveries++
			return executor.Result{Delivered: true}
		}
		h.runner.o.DiscoveryHour = 9
		h.runner.o.PlanSlots = slots
		return h
	}
	dec := &scriptedDecider{ds: []PlannerDecision{skipDecision()}}
	first := newRunner(newHarness(t, dec, nil))
	if out := first.runner.TickOnce(context.Background()); out.Route != RouteScheduledFire || discoveries != 1 {
		t.Fatalf("first: route %q discoveries %d", out.Route, discoveries)
	}
	second := newRunner(newHarness(t, dec, nil))
	second.clk.Set(first.clk.Now().Add(30 * time.Minute))
	if out := second.runner.TickOnce(context.Background()); out.Route == RouteScheduledFire || discoveries != 1 {
		t.Fatalf("after restart: route %q discoveries %d", out.Route, discoveries)
	}
	second.clk.Advance(24 * time.Hour)
	if out := second.runner.TickOnce(context.Background()); out.Route != RouteScheduledFire || discoveries != 2 {
		t.Fatalf("next day: route %q discoveries %d", out.Route, discoveries)
	}
}
