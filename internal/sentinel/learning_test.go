package sentinel

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/session"
)

// toolRouter answers each tool by name and records the prompts.
type toolRouter struct {
	mu      sync.Mutex
	byTool  map[string]string
	prompts map[string][]string
}

func (p *toolRouter) Name() string { return "router" }

func (p *toolRouter) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := req.Tools[0].Name
	p.prompts[name] = append(p.prompts[name], req.Messages[len(req.Messages)-1].Content)
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: name, Arguments: p.byTool[name]}}}, nil
}

func (p *toolRouter) calls(tool string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prompts[tool]
}

type learnRig struct {
	sys   *System
	clk   *clock.Fake
	prov  *toolRouter
	paths Paths
}

// Thursday 2026-12-03 20:00 UTC.
var learnT0 = time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)

func newLearnRig(t *testing.T, mod func(*Config), msgs []session.Entry) *learnRig {
	t.Helper()
	p := testPaths(t.TempDir())
	cfg := DefaultConfig()
	cfg.Discovery = false // the daily menu would eat the planner script; tests that want it turn it on
	cfg.Policy = roomyPolicy()
	if mod != nil {
		mod(&cfg)
	}
	r := &learnRig{clk: clock.NewFake(learnT0), paths: p, prov: &toolRouter{
		byTool: map[string]string{
			PlannerToolName:               decisionJSON("skip", "", nil),
			predictor.RecordBehaviorsTool: `{"events":[{"time":"2026-12-03T18:00:00Z","kind":"habit","summary":"Owner climbs on Thursday evenings","confidence":0.9}]}`,
		},
		prompts: map[string][]string{},
	}}
	var err error
	r.sys, err = NewSystem(SystemOptions{
		Paths: p, Config: cfg, Provider: r.prov, Model: "m",
		Messages: func(_ context.Context, since time.Time, limit int) ([]session.Entry, error) {
			var out []session.Entry
			for _, m := range msgs {
				if m.At.After(since) && len(out) < limit {
					out = append(out, m)
				}
			}
			return out, nil
		},
		Clock: r.clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeWeekly appends a Thursday 17:00 gym line for weeks weeks, then
// enough unrelated chat to push them out of the planner's 16 KiB tail.
func writeWeekly(t *testing.T, path string, weeks, fillerBytes int) {
	t.Helper()
	for w := weeks; w >= 1; w-- {
		at := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC).AddDate(0, 0, -7*w)
		if err := memory.AppendHistory(path, at, "telegram:42", "user", "heading to the gym"); err != nil {
			t.Fatal(err)
		}
		for d := range 6 {
			if err := memory.AppendHistory(path, at.AddDate(0, 0, d+1).Add(-6*time.Hour), "telegram:42", "user", fmt.Sprintf("question number %d about item%d", w*10+d, w*10+d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	filler := strings.Repeat("lorem ", 30)
	for i := 0; fillerBytes > 0; i++ {
		at := learnT0.Add(-time.Duration(fillerBytes) * time.Second)
		if err := memory.AppendHistory(path, at, "telegram:42", "assistant", filler); err != nil {
			t.Fatal(err)
		}
		fillerBytes -= 250
	}
}

func TestSystemRoutinesReachPlanner(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Config)
		filler int
		want   bool
	}{
		{name: "default learner", want: true},
		{name: "longer tail than the planner's", filler: 20 << 10, want: true},
		{name: "planner tail only", filler: 20 << 10, mod: func(c *Config) { c.Routines.TailBytes = 0 }},
		{name: "disabled", mod: func(c *Config) { c.Routines.Enabled = false }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLearnRig(t, tc.mod, nil)
			writeWeekly(t, r.paths.History, 6, tc.filler)
			pc := r.sys.Assembler.Assemble(context.Background())
			if got := len(pc.Routines) == 1; got != tc.want {
				t.Fatalf("routines = %+v, want one: %v", pc.Routines, tc.want)
			}
			if !tc.want {
				return
			}
			rt := pc.Routines[0]
			if rt.When != "Thursdays ~17:00" || !strings.Contains(rt.Description, "gym") || rt.Samples != 6 || rt.LastSeen.IsZero() || rt.Confidence != 0.86 { // 6 of 7 Thursdays: today's 17:00 passed without one
				t.Fatalf("routine = %+v", rt)
			}
			r.sys.Runner.TickOnce(context.Background())
			prompts := r.prov.calls(PlannerToolName)
			if len(prompts) != 1 || !strings.Contains(prompts[0], "# Routines\n- gym") || !strings.Contains(prompts[0], "(Thursdays ~17:00) — seen 6 times, confidence 0.86, last Thu 26 Nov 17:00") {
				t.Fatalf("planner prompt:\n%s", prompts)
			}
		})
	}
}

func TestSystemBehaviorsExtractorWiring(t *testing.T) {
	msgs := []session.Entry{
		{Message: llm.Message{Role: llm.RoleUser, Content: "off to climbing, as every Thursday"}, Conversation: "telegram:42", At: learnT0.Add(-2 * time.Hour)},
		{Message: llm.Message{Role: llm.RoleAssistant, Content: "Have fun!"}, Conversation: "telegram:42", At: learnT0.Add(-2 * time.Hour)},
	}
	ctx := context.Background()

	off := newLearnRig(t, nil, msgs)
	if off.sys.Behaviors != nil {
		t.Fatal("behaviors extractor on by default")
	}
	off.sys.Runner.TickOnce(ctx)
	if n := len(off.prov.calls(predictor.RecordBehaviorsTool)); n != 0 {
		t.Fatalf("extractor called %d times while off", n)
	}

	r := newLearnRig(t, func(c *Config) { c.Behaviors.Enabled = true }, msgs)
	if r.sys.Behaviors == nil {
		t.Fatal("extractor not built")
	}
	r.sys.Runner.TickOnce(ctx)
	b, err := os.ReadFile(r.paths.Behaviors)
	if err != nil || !strings.Contains(string(b), "- 2026-12-03T18:00:00Z [habit] Owner climbs on Thursday evenings (confidence 0.90)\n") {
		t.Fatalf("behaviors.md = %q, %v", b, err)
	}
	planner := r.prov.calls(PlannerToolName)
	if len(planner) != 1 || !strings.Contains(planner[0], "# Recent behaviour\n- 2026-12-03T18:00:00Z [habit] Owner climbs on Thursday evenings") {
		t.Fatalf("the same tick's planner did not read the event:\n%s", planner)
	}
	// The next tick is within the interval: no second extraction.
	r.clk.Advance(30 * time.Minute)
	r.sys.Runner.TickOnce(ctx)
	if n := len(r.prov.calls(predictor.RecordBehaviorsTool)); n != 1 {
		t.Fatalf("extractor called %d times", n)
	}
	st, err := r.sys.Behaviors.State(ctx)
	if err != nil || !st.HighWater.Equal(msgs[1].At) || st.LastEvents != 1 {
		t.Fatalf("state = %+v, %v", st, err)
	}

	// The owner is active: the idle gate holds.
	busy := append([]session.Entry{}, msgs...)
	busy = append(busy, session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "still here"}, Conversation: "telegram:42", At: learnT0.Add(-5 * time.Minute)})
	r2 := newLearnRig(t, func(c *Config) { c.Behaviors.Enabled = true }, busy)
	if res := r2.sys.Behaviors.MaybeRun(ctx); res.Skipped != predictor.SkipOwnerActive {
		t.Fatalf("owner active: %+v", res)
	}
}
