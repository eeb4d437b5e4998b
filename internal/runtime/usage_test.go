package runtime

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/usage"
)

const heartbeatTasks = "# Heartbeat\n## Tasks\n- At 9:00 on weekdays, send me the day's agenda.\n"

// newMeteredApp builds the runtime from the default config with the model
// "openai/fake" served by the fake model server on loopback, a fake clock
// and mut applied to the config.
func newMeteredApp(t *testing.T, mut func(*config.Config)) (*Runtime, *clock.Fake, *fakeopenai.Server) {
	t.Helper()
	srv := fakeopenai.Start(t, fakeopenai.Options{})
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = "openai/" + fakeopenai.DefaultModel
	cfg.Sentinel.Policy.Location = time.UTC
	if mut != nil {
		mut(&cfg)
	}
	clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
	a, err := Build(context.Background(), Options{Paths: p, Config: cfg, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a, clk, srv
}

// captured is an attached terminal that keeps what it was shown.
type captured struct {
	mu   sync.Mutex
	msgs []spine.Message
}

func (c *captured) deliver(_ context.Context, m spine.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
	return nil
}

func (c *captured) containing(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if strings.Contains(m.Content, s) {
			n++
		}
	}
	return n
}

func cronJob(t *testing.T, a *Runtime, clk clock.Clock, msg string) cron.Job {
	t.Helper()
	job, err := cron.NewJob(cron.Spec{Name: "water", Message: msg, Every: "1h", Deliver: true, Channel: "cli", To: "local"}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if job, err = a.CronStore().Add(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

// Every model call path of the assembled runtime records its usage under
// the right origin: user and cron turns, a subagent, the Sentinel planner,
// task discovery, the pick classifier, the heartbeat and the behaviours
// extractor. The fake server's request count must equal the recorded
// calls, and none may be charged to "unknown": a path that bypasses the
// meter or forgets its tag fails here.
func TestEveryModelCallRecordsUsage(t *testing.T) {
	a, clk, srv := newMeteredApp(t, func(c *config.Config) { c.Sentinel.Behaviors.Enabled = true; c.Sentinel.Analysis.Enabled = true })
	srv.On(fakeopenai.Offers("propose_tasks"), fakeopenai.Always(fakeopenai.Call("propose_tasks", testMenu)))
	srv.On(fakeopenai.Offers(predictor.RecordAnalysisTool), fakeopenai.Always(fakeopenai.Call(predictor.RecordAnalysisTool, `{"commitments":[],"themes":["water"]}`)))
	ctx := context.Background()
	var term captured
	if _, err := a.Attach(ctx, "cli:local", SurfaceFunc(term.deliver)); err != nil {
		t.Fatal(err)
	}

	turn(t, a, "what's on today?") // user
	if res := a.Sentinel().Runner.RunDiscovery(ctx); !res.Delivered {
		t.Fatalf("discovery menu not delivered: %+v", res)
	}
	turn(t, a, "hmm, maybe the one about the passport?") // router, then the agent
	job := cronJob(t, a, clk, "drink water")
	if run, err := a.FireCron(ctx, job.ID); err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("cron fire: %+v %v", run, err)
	}
	done := make(chan struct{})
	if err := a.Subagents().Run(ctx, "look up the weather", func(context.Context, string, error) { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	a.Sentinel().Runner.TickOnce(ctx) // sentinel planner
	if err := os.WriteFile(a.Paths().Heartbeat(), []byte(heartbeatTasks), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Heartbeat().TickOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Sentinel().Analysis.Latest(ctx); !ok { // the daily analysis
		t.Fatal("daily analysis not made")
	}
	clk.Advance(7 * time.Hour) // the owner idle, the extractor's interval over
	if res := a.Sentinel().Behaviors.MaybeRun(ctx); res.Skipped != "" {
		t.Fatalf("extractor skipped: %+v", res)
	}

	calls, err := a.Usage().Calls(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); len(calls) != n {
		t.Fatalf("%d model requests, %d recorded: %+v", n, len(calls), calls)
	}
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.Origin]++
		if c.Model != "openai/fake" || c.Provider != "openai" || !c.OK || c.Tokens.Input == 0 || c.Tokens.Output == 0 {
			t.Errorf("call recorded wrong: %+v", c)
		}
	}
	for _, o := range []string{"user", "cron", "subagent", "sentinel", "discovery", "router", "heartbeat", "extractor", "analysis"} {
		if seen[o] == 0 {
			t.Errorf("no usage recorded for origin %s (recorded: %v)", o, seen)
		}
	}
	if seen[usage.OriginUnknown] > 0 {
		t.Errorf("%d calls carried no origin", seen[usage.OriginUnknown])
	}
	// The heartbeat's decision was no tool call (the fake's text): its tick
	// delivered nothing, and so did the planner's — both silent.
	for _, c := range calls {
		if (c.Origin == "heartbeat" || c.Origin == "sentinel") && (!c.Tick || !c.Silent) {
			t.Errorf("silent tick not marked: %+v", c)
		}
		if c.Origin == "user" && c.Conversation != "cli:local" {
			t.Errorf("user call conversation = %q", c.Conversation)
		}
	}
}

// A cap on ambient work, once reached, pauses the Sentinel and the
// heartbeat: no model call on later ticks, one notice to the owner and one
// event for the pause. A fixed-message cron job still fires and the
// owner's chat still answers. The next day (owner's zone) they resume.
func TestAmbientCapPausesUntilNextDay(t *testing.T) {
	a, clk, srv := newMeteredApp(t, func(c *config.Config) {
		c.Usage.Caps = map[string]usage.Cap{usage.ScopeAmbient: {DailyTokens: 1}}
		c.Sentinel.Policy.Location = time.FixedZone("CET", 3600) // the owner's zone
		// The pause is what is tested around midnight, not quiet hours.
		c.Heartbeat.QuietHours = false
	})
	srv.On(fakeopenai.Offers(sentinel.PlannerToolName), fakeopenai.Always(fakeopenai.Call(sentinel.PlannerToolName,
		`{"action":"skip","reason":"nothing to say","priority":"low","proactivity_score":0.1}`)))
	srv.On(fakeopenai.Offers(heartbeat.DecisionTool), fakeopenai.Always(fakeopenai.Call(heartbeat.DecisionTool,
		`{"action":"skip","reason":"not 9:00"}`)))
	ctx := context.Background()
	var term captured
	if _, err := a.Attach(ctx, "cli:local", SurfaceFunc(term.deliver)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Paths().Heartbeat(), []byte(heartbeatTasks), 0o600); err != nil {
		t.Fatal(err)
	}
	requests := func() int { return len(srv.Requests()) }

	a.Sentinel().Runner.TickOnce(ctx) // spends past the 1-token cap
	if requests() != 1 {
		t.Fatalf("first tick made %d calls", requests())
	}
	for i := 0; i < 3; i++ {
		clk.Advance(15 * time.Minute)
		a.Sentinel().Runner.TickOnce(ctx)
		if o, _ := a.Heartbeat().TickOnce(ctx); o.Route != heartbeat.RouteError || !strings.Contains(o.Error, "paused") {
			t.Fatalf("heartbeat tick while paused: %+v", o)
		}
	}
	if requests() != 1 {
		t.Fatalf("paused ambient work made %d more model calls", requests()-1)
	}
	if n := term.containing("Usage cap reached"); n != 1 {
		t.Fatalf("%d pause notices, want 1: %+v", n, term.msgs)
	}
	if err := a.FlushEvents(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := pauseEvents(t, a); evs != 1 {
		t.Fatalf("%d %s events, want 1", evs, eventlog.KindUsagePaused)
	}

	// Requested work fails open.
	job := cronJob(t, a, clk, "drink water")
	if run, err := a.FireCron(ctx, job.ID); err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("cron fire while paused: %+v %v", run, err)
	}
	if reply := turn(t, a, "still there?"); !strings.Contains(reply, "fake reply") {
		t.Fatalf("chat while paused: %q", reply)
	}
	afterRequested := requests()
	if afterRequested != 3 {
		t.Fatalf("cron + chat made %d calls, want 2", afterRequested-1)
	}

	// Still paused at 23:59 in the owner's zone (UTC+1 here, so UTC 22:59).
	clk.Set(time.Date(2025, 3, 4, 22, 59, 0, 0, time.UTC))
	if o, _ := a.Heartbeat().TickOnce(ctx); o.Route != heartbeat.RouteError || requests() != afterRequested {
		t.Fatalf("heartbeat before the owner's midnight: %+v", o)
	}
	// Past the owner's midnight: a fresh day, ambient work resumes.
	clk.Set(time.Date(2025, 3, 4, 23, 1, 0, 0, time.UTC))
	if o, err := a.Heartbeat().TickOnce(ctx); err != nil || o.Route != heartbeat.RouteSkip {
		t.Fatalf("heartbeat after the owner's midnight: %+v %v", o, err)
	}
	if requests() != afterRequested+1 {
		t.Fatal("the heartbeat did not call the model the next day")
	}
	// Reaching the cap again the new day is a new pause: one more notice
	// and one more event.
	clk.Advance(30 * time.Minute)
	if o, _ := a.Heartbeat().TickOnce(ctx); o.Route != heartbeat.RouteError {
		t.Fatalf("heartbeat over the new day's cap: %+v", o)
	}
	if n := term.containing("Usage cap reached"); n != 2 {
		t.Fatalf("%d pause notices after the second day's pause, want 2", n)
	}
	if err := a.FlushEvents(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := pauseEvents(t, a); evs != 2 {
		t.Fatalf("%d %s events after two pauses, want 2", evs, eventlog.KindUsagePaused)
	}
}

func pauseEvents(t *testing.T, a *Runtime) int {
	t.Helper()
	evs, _, err := a.Events().Tail(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == eventlog.KindUsagePaused {
			n++
		}
	}
	return n
}

// A Sentinel spawn is ambient work: its micro-agent's calls are charged to
// the Sentinel (and so held to its caps), not to "subagent", and the tick
// that started it is no silent tick.
func TestSentinelSpawnChargedToSentinel(t *testing.T) {
	a, _, srv := newMeteredApp(t, nil)
	srv.On(fakeopenai.Offers(sentinel.PlannerToolName), fakeopenai.Always(fakeopenai.Call(sentinel.PlannerToolName,
		`{"action":"spawn_agent","spawn_task":"summarise my unread mail","target_session":"cli:local","priority":"high",`+
			`"proactivity_score":0.9,"reason":"inbox piling up","topic":"mail"}`)))
	ctx := context.Background()
	var term captured
	if _, err := a.Attach(ctx, "cli:local", SurfaceFunc(term.deliver)); err != nil {
		t.Fatal(err)
	}
	if out := a.Sentinel().Runner.TickOnce(ctx); !out.Delivered() {
		t.Fatalf("spawn not started: %+v", out.Record())
	}
	eventually(t, "the spawn's result shown", func() bool { return term.containing("fake reply") > 0 })
	a.Subagents().Wait()
	all, err := a.Usage().Calls(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var calls []usage.Call
	for _, c := range all {
		if c.Origin != "discovery" { // the tick's daily discovery, also due
			calls = append(calls, c)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("calls: %+v", calls)
	}
	tick, spawned := calls[0], calls[1]
	if tick.Origin != "sentinel" || !tick.Tick || tick.Silent {
		t.Errorf("the tick's call: %+v", tick)
	}
	if spawned.Origin != "sentinel" || !strings.HasPrefix(spawned.Conversation, "subagent:") || spawned.Tick {
		t.Errorf("the spawned micro-agent's call: %+v", spawned)
	}
}
