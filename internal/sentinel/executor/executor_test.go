package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}

type fakeGate struct {
	mu     sync.Mutex
	deny   policy.Verdict
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
	return "n-" + string(rune('0'+len(g.fired))), nil
}

func (g *fakeGate) firedN() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.fired)
}

var t0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T, path string, clk clock.Clock) *statefile.Store {
	t.Helper()
	s, err := statefile.Open(path, statefile.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDispatcherNeverChargesFailedDelivery(t *testing.T) {
	tests := []struct {
		name      string
		post      PostFunc
		deny      string
		session   string
		wantDeliv bool
		wantFired int
		wantLayer string
	}{
		{"delivered", func(context.Context, spine.Message) error { return nil }, "", "telegram:1", true, 1, ""},
		{"outlet error", func(context.Context, spine.Message) error { return errors.New("telegram down") }, "", "telegram:1", false, 0, ""},
		{"no outlet", func(ctx context.Context, m spine.Message) error { return spine.NewHub(nil).Post(ctx, m) }, "", "telegram:1", false, 0, ""},
		{"no post bound", nil, "", "telegram:1", false, 0, ""},
		{"no target", func(context.Context, spine.Message) error { return nil }, "", "", false, 0, LayerInput},
		{"denied", func(context.Context, spine.Message) error { t.Fatal("posted despite denial"); return nil }, policy.LayerHourQuota, "telegram:1", false, 0, policy.LayerHourQuota},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGate{deny: policy.Verdict{Layer: tc.deny}}
			var delivered []Delivery
			d := NewDispatcher(DispatcherOptions{Gate: g, Post: tc.post, OnDelivered: func(_ context.Context, x Delivery) { delivered = append(delivered, x) }})
			r := d.Dispatch(context.Background(), Nudge{Action: policy.ActionNudge, Message: "hi", Session: tc.session})
			if r.Delivered != tc.wantDeliv || g.firedN() != tc.wantFired || r.Verdict.Layer != tc.wantLayer {
				t.Fatalf("result %+v fired %d", r, g.firedN())
			}
			if tc.wantDeliv && (r.NudgeID == "" || len(delivered) != 1 || delivered[0].NudgeID != r.NudgeID) {
				t.Fatalf("delivery not reported: %+v %+v", r, delivered)
			}
			if !tc.wantDeliv && len(delivered) != 0 {
				t.Fatalf("undelivered reported as delivered")
			}
		})
	}
}

// The policy is asked about the sessions a nudge resolves to, and the fire
// records the sessions it reached.
func TestDispatcherChecksResolvedTargets(t *testing.T) {
	tests := []struct {
		name      string
		session   string
		targets   []Target
		wantCheck []string
		wantFire  string
		wantAlso  []string
	}{
		{"own session", "telegram:1", nil, []string{"telegram:1"}, "telegram:1", nil},
		{"default target", "", []Target{{"telegram", "9"}}, []string{"telegram:9"}, "telegram:9", nil},
		{"two outlets", "", []Target{{"telegram", "9"}, {"webhook", "h"}}, []string{"telegram:9", "webhook:h"}, "telegram:9", []string{"webhook:h"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGate{}
			d := NewDispatcher(DispatcherOptions{Gate: g, Post: func(context.Context, spine.Message) error { return nil },
				Targets: func(string) []Target { return tc.targets }})
			if r := d.Dispatch(context.Background(), Nudge{Message: "hi", Session: tc.session}); !r.Delivered {
				t.Fatalf("%+v", r)
			}
			var checked []string
			for _, c := range g.checks {
				checked = append(checked, c.SessionKey)
			}
			if !slices.Equal(checked, tc.wantCheck) || g.fired[0].SessionKey != tc.wantFire || !slices.Equal(g.fired[0].AlsoSessions, tc.wantAlso) {
				t.Fatalf("checked %v fired %+v", checked, g.fired)
			}
		})
	}
}

func TestDispatcherLateBoundPostAndMarker(t *testing.T) {
	d := NewDispatcher(DispatcherOptions{})
	if r := d.Dispatch(context.Background(), Nudge{Message: "x", Session: "cli:1"}); r.Delivered {
		t.Fatal("delivered with no post bound")
	}
	var got spine.Message
	d.SetPost(func(_ context.Context, m spine.Message) error { got = m; return nil })
	pd := PendingDecision{ID: "pd1", Session: "cli:1", Title: "Ideas:", Options: []Option{{Title: "A", Reason: "because", Kind: KindReply}, {Title: "B", Kind: KindSpawn}}}
	r := d.DispatchOptions(context.Background(), pd)
	if !r.Delivered || !got.Proactive || got.Origin != spine.OriginSentinel || got.Reply {
		t.Fatalf("%+v %+v", r, got)
	}
	want := "Ideas:\n\n1. A — because\n2. B\n\nReply with a number (or /pick N) to choose."
	if got.Content != want {
		t.Fatalf("menu not verbatim:\n%q\nwant\n%q", got.Content, want)
	}
}

func TestInjectorTTLAndCap(t *testing.T) {
	clk := clock.NewFake(t0)
	g := &fakeGate{}
	in, err := NewInjector(InjectorOptions{Store: openStore(t, filepath.Join(t.TempDir(), "state.json"), clk), Gate: g, TTL: time.Hour, Cap: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := func(msg string) {
		if r := in.Queue(ctx, Nudge{Message: msg, Session: "tg:1"}); !r.Queued {
			t.Fatalf("queue %q: %+v", msg, r)
		}
	}
	q("one")
	clk.Advance(10 * time.Minute)
	q("two")
	q("three") // cap 2: "one" evicted
	if got := in.Modify("tg:1", "reply"); got != "reply\n\ntwo\n\nthree" {
		t.Fatalf("cap: got %q", got)
	}
	if g.firedN() != 3 {
		t.Fatalf("fired %d, want 3 (charged when queued)", g.firedN())
	}
	in.Settle("tg:1", true)
	if g.firedN() != 3 {
		t.Fatalf("fired %d, want 3 (delivery charges nothing more)", g.firedN())
	}
	if got := in.Modify("tg:1", "again"); got != "again" {
		t.Fatalf("consumed twice: %q", got)
	}
	q("stale")
	clk.Advance(time.Hour)
	if got := in.Modify("tg:1", "late"); got != "late" {
		t.Fatalf("TTL: expired inject delivered: %q", got)
	}
	if got := in.Modify("tg:2", "other"); got != "other" {
		t.Fatalf("other session got %q", got)
	}
	// Denied: nothing queued.
	g.deny = policy.Verdict{Layer: policy.LayerDedup}
	if r := in.Queue(ctx, Nudge{Message: "x", Session: "tg:1"}); r.Queued || r.Verdict.Layer != policy.LayerDedup {
		t.Fatalf("%+v", r)
	}
	if r := in.Queue(ctx, Nudge{Message: "x"}); r.Verdict.Layer != LayerInput {
		t.Fatalf("inject without session: %+v", r)
	}
}

func TestInjectorSharedAcrossStores(t *testing.T) {
	// Two Store instances on one file hold separate flock descriptors, as two
	// processes would: an inject queued by one is consumed exactly once.
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "state.json")
	a, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Clock: clk})
	b, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Clock: clk})
	a.Queue(context.Background(), Nudge{Message: "m", Session: "s:1"})
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in := a
			if i%2 == 1 {
				in = b
			}
			results[i] = in.Modify("s:1", "r")
		}(i)
	}
	wg.Wait()
	n := 0
	for _, r := range results {
		if r == "r\n\nm" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("inject delivered %d times: %v", n, results)
	}
}

func TestDeferSettleExpiryRestart(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "state.json")
	g := &fakeGate{}
	var mu sync.Mutex
	var sent []string
	dispatch := func(_ context.Context, n Nudge) Result {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, n.Message)
		return Result{Delivered: true, Verdict: policy.Verdict{Allow: true}}
	}
	last := map[string]time.Time{"tg:busy": t0, "tg:idle": t0.Add(-time.Hour)}
	newMgr := func() *DeferManager {
		m, err := NewDeferManager(DeferOptions{Store: openStore(t, path, clk), Gate: g, Dispatch: dispatch, Clock: clk,
			IdleThreshold: 10 * time.Minute, MaxWait: time.Hour,
			LastActivity: func(_ context.Context, s string) (time.Time, bool) {
				mu.Lock()
				defer mu.Unlock()
				v, ok := last[s]
				return v, ok
			}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ctx := context.Background()
	m := newMgr()
	m.Register(ctx, Nudge{Message: "low-idle", Session: "tg:idle", Priority: policy.PriorityLow}, "idle")
	m.Register(ctx, Nudge{Message: "high-idle", Session: "tg:idle", Priority: policy.PriorityHigh}, "idle")
	m.Register(ctx, Nudge{Message: "busy", Session: "tg:busy"}, "thread settles")

	// Restart: a fresh manager on a fresh store sees the same heap.
	m = newMgr()
	if p, _ := m.Pending(ctx); len(p) != 3 || p[0].Nudge.Message != "high-idle" {
		t.Fatalf("pending after restart: %+v", p)
	}
	m.Poll(ctx)
	if strings.Join(sent, ",") != "high-idle,low-idle" {
		t.Fatalf("sent %v: want idle session's nudges, high priority first", sent)
	}
	// The busy session keeps talking: never settles, then expires.
	for i := 0; i < 6; i++ {
		clk.Advance(9 * time.Minute)
		mu.Lock()
		last["tg:busy"] = clk.Now()
		mu.Unlock()
		m.Poll(ctx)
	}
	clk.Advance(10 * time.Minute) // past MaxWait, now idle too
	m.Poll(ctx)
	if len(sent) != 2 {
		t.Fatalf("expired defer was sent: %v", sent)
	}
	if p, _ := m.Pending(ctx); len(p) != 0 {
		t.Fatalf("expired entry kept: %+v", p)
	}
}

func TestDeferRequeuesUndelivered(t *testing.T) {
	clk := clock.NewFake(t0)
	fail := true
	m, _ := NewDeferManager(DeferOptions{Store: openStore(t, filepath.Join(t.TempDir(), "s.json"), clk), Clock: clk, IdleThreshold: time.Minute, MaxWait: time.Hour,
		Dispatch: func(context.Context, Nudge) Result { return Result{Delivered: !fail} }})
	ctx := context.Background()
	m.Register(ctx, Nudge{Message: "x"}, "c")
	clk.Advance(2 * time.Minute)
	if r := m.Poll(ctx); len(r) != 1 || r[0].Delivered {
		t.Fatalf("%+v", r)
	}
	if p, _ := m.Pending(ctx); len(p) != 1 || p[0].Attempts != 1 {
		t.Fatalf("not requeued: %+v", p)
	}
	fail = false
	if r := m.Poll(ctx); len(r) != 1 || !r[0].Delivered {
		t.Fatalf("%+v", r)
	}
}

func TestDeferRunLoop(t *testing.T) {
	clk := clock.NewFake(t0)
	done := make(chan Result, 1)
	m, _ := NewDeferManager(DeferOptions{Store: openStore(t, filepath.Join(t.TempDir(), "s.json"), clk), Clock: clk, IdleThreshold: time.Minute, PollInterval: time.Minute,
		Dispatch: func(context.Context, Nudge) Result { return Result{Delivered: true} }, OnDispatch: func(_ DeferEntry, r Result) { done <- r }})
	ctx, cancel := context.WithCancel(context.Background())
	m.Register(ctx, Nudge{Message: "x"}, "c")
	finished := make(chan struct{})
	go func() { m.Run(ctx); close(finished) }()
	clk.BlockUntil(1)
	clk.Advance(time.Minute)
	if r := <-done; !r.Delivered {
		t.Fatal(r)
	}
	cancel()
	<-finished
}

func TestSpawn(t *testing.T) {
	tests := []struct {
		name      string
		req       SpawnRequest
		spawnErr  error
		deny      string
		wantDeliv bool
		wantFired int
	}{
		{"ok", SpawnRequest{Task: "digest", Session: "tg:1"}, nil, "", true, 1},
		{"empty task", SpawnRequest{Session: "tg:1"}, nil, "", false, 0},
		{"bad session", SpawnRequest{Task: "digest", Session: "nocolon"}, nil, "", false, 0},
		{"spawn fails", SpawnRequest{Task: "digest", Session: "tg:1"}, errors.New("pool full"), "", false, 0},
		{"denied", SpawnRequest{Task: "digest", Session: "tg:1"}, nil, policy.LayerDedup, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGate{deny: policy.Verdict{Layer: tc.deny}}
			var gotCh, gotID string
			s := NewSpawn(SpawnOptions{Gate: g, Spawn: func(_ context.Context, task, ch, id string) error { gotCh, gotID = ch, id; return tc.spawnErr }})
			r := s.Dispatch(context.Background(), tc.req)
			if r.Delivered != tc.wantDeliv || g.firedN() != tc.wantFired {
				t.Fatalf("%+v fired %d", r, g.firedN())
			}
			if tc.wantDeliv && (gotCh != "tg" || gotID != "1" || g.fired[0].Action != policy.ActionSpawn || g.fired[0].Content != "digest") {
				t.Fatalf("spawned to %s:%s fired %+v", gotCh, gotID, g.fired)
			}
		})
	}
}

// classifier answers every call with a classify_pick tool call.
type classifier struct {
	args  string
	calls int
}

func (c *classifier) Chat(context.Context, llm.Request) (*llm.Response, error) {
	c.calls++
	return &llm.Response{ToolCalls: []llm.ToolCall{{Name: classifyTool, Arguments: c.args}}}, nil
}
func (c *classifier) Name() string { return "fake" }

func TestRouterDeterministicBeatsClassifier(t *testing.T) {
	pd := PendingDecision{State: StateOpen, Options: []Option{{Title: "Weather"}, {Title: "Inbox digest"}, {Title: "Plan week"}}}
	tests := []struct {
		reply     string
		clsArgs   string
		wantOK    bool
		wantIndex int
		wantVia   string
		wantCalls int
	}{
		{"2", `{"option":3,"confidence":1}`, true, 2, "deterministic", 0},
		{"/pick 3", `{"option":1,"confidence":1}`, true, 3, "deterministic", 0},
		{" #1. ", `{"option":3,"confidence":1}`, true, 1, "deterministic", 0},
		{"option 2", `{"option":3,"confidence":1}`, true, 2, "deterministic", 0},
		{"the inbox one please", `{"option":2,"confidence":0.9}`, true, 2, "classifier", 1},
		{"the inbox one maybe", `{"option":2,"confidence":0.5}`, false, 0, "", 1},
		{"what's the weather in Paris?", `{"option":0,"confidence":0.9}`, false, 0, "", 1},
		{"9", `{"option":1,"confidence":1}`, true, 1, "classifier", 1},                 // out of range: not deterministic
		{strings.Repeat("long ", 100), `{"option":1,"confidence":1}`, false, 0, "", 0}, // never classified
	}
	for _, tc := range tests {
		t.Run(tc.reply, func(t *testing.T) {
			c := &classifier{args: tc.clsArgs}
			r := NewRouter(RouterOptions{Provider: c, MinConfidence: 0.7})
			m, ok := r.Route(context.Background(), pd, tc.reply)
			if ok != tc.wantOK || m.Index != tc.wantIndex || m.Via != tc.wantVia || c.calls != tc.wantCalls {
				t.Fatalf("got %+v ok=%v calls=%d", m, ok, c.calls)
			}
		})
	}
}

func TestConsumerHook(t *testing.T) {
	clk := clock.NewFake(t0)
	dir := t.TempDir()
	g := &fakeGate{}
	store := NewPendingDecisionStore(filepath.Join(dir, "pending_decisions.json"), time.Hour, clk)
	inj, _ := NewInjector(InjectorOptions{Store: openStore(t, filepath.Join(dir, "state.json"), clk), Gate: g, Clock: clk})
	var spawned []string
	sp := NewSpawn(SpawnOptions{Gate: g, Spawn: func(_ context.Context, task, _, _ string) error { spawned = append(spawned, task); return nil }})
	ex := NewActionExecutor(ActionExecutorOptions{Gate: g, Injector: inj, Spawn: sp})
	ctx := context.Background()
	put := func(confirm bool) *DecisionConsumer {
		_, err := store.Put(ctx, PendingDecision{Session: "tg:1", Title: "Today?", Options: []Option{
			{Title: "Weather", Kind: KindReply, Reply: "Sunny, 21°C."},
			{Title: "Inbox", Kind: "tool"}, // no longer offered; an old menu may hold one
			{Title: "Digest", Kind: KindSpawn, Task: "summarise news"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return NewConsumer(ConsumerOptions{Store: store, Executor: ex, Confirm: confirm})
	}
	user := func(s string) spine.TurnRequest {
		return spine.TurnRequest{Origin: spine.OriginUser, Channel: "tg", ChatID: "1", Content: s}
	}

	c := put(false)
	if h, _ := c.Hook(ctx, spine.TurnRequest{Origin: spine.OriginSentinel, Channel: "tg", ChatID: "1", Content: "1"}); h {
		t.Fatal("non-user origin consumed")
	}
	if h, _ := c.Hook(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: "tg", ChatID: "2", Content: "1"}); h {
		t.Fatal("other session consumed")
	}
	if h, _ := c.Hook(ctx, user("how are you?")); h {
		t.Fatal("non-pick consumed")
	}
	if h, reply := c.Hook(ctx, user("1")); !h || reply != "Sunny, 21°C." {
		t.Fatalf("reply pick: %v %q", h, reply)
	}
	if g.firedN() != 1 || !g.fired[0].Answer {
		t.Fatalf("reply pick not charged as an answer when queued: %+v", g.fired)
	}
	inj.SettleTurn(user("1"), true)
	if g.firedN() != 1 {
		t.Fatalf("reply pick charged twice: %d", g.firedN())
	}
	if h, _ := c.Hook(ctx, user("2")); h {
		t.Fatal("closed menu consumed a second pick")
	}
	c = put(false)
	if h, reply := c.Hook(ctx, user("/pick 2")); !h || !strings.Contains(reply, "couldn't") {
		t.Fatalf("stale tool pick: %v %q", h, reply)
	}
	c = put(true)
	if h, reply := c.Hook(ctx, user("3")); !h || !strings.Contains(reply, "Reply yes") || len(spawned) != 0 {
		t.Fatalf("confirm step: %v %q", h, reply)
	}
	if h, reply := c.Hook(ctx, user("yes")); !h || !strings.Contains(reply, "On it") || len(spawned) != 1 {
		t.Fatalf("confirm: %v %q %v", h, reply, spawned)
	}
	if g.firedN() != 2 {
		t.Fatalf("fired %d, want 2 (reply, spawn)", g.firedN())
	}
	// Supersede: a new menu replaces the open one; TTL closes it.
	c = put(false)
	first, _, _ := store.Active(ctx, "tg:1")
	put(false)
	second, _, _ := store.Active(ctx, "tg:1")
	if first.ID == second.ID {
		t.Fatal("not superseded")
	}
	clk.Advance(2 * time.Hour)
	if h, _ := c.Hook(ctx, user("1")); h {
		t.Fatal("expired menu consumed a pick")
	}
}

func TestPendingStoreCorruptMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending_decisions.json")
	if err := os.WriteFile(path, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewPendingDecisionStore(path, 0, clock.NewFake(t0))
	if _, _, err := s.Active(context.Background(), "x:1"); err == nil || !strings.Contains(err.Error(), "moved aside") {
		t.Fatalf("err = %v", err)
	}
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("not moved aside: %v", matches)
	}
	if _, err := s.Put(context.Background(), PendingDecision{Session: "x:1", Options: []Option{{Title: "a", Kind: KindReply}}}); err != nil {
		t.Fatal(err)
	}
}
