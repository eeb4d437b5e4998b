package sentinel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/tools"
)

// The tests in this file run every proactive path through NewSystem with
// the DEFAULT policy (only the time zone is pinned, for determinism), so
// the real quotas, cooldowns and dedup decide.

// newDefaultSys is newSysHarness with policy.DefaultConfig and a hook to
// add options.
func newDefaultSys(t *testing.T, mod func(*Config), opt func(*SystemOptions)) *sysHarness {
	t.Helper()
	p := testPaths(t.TempDir())
	cfg := DefaultConfig()
	cfg.Discovery = false // the daily menu would eat the planner script; tests that want it turn it on
	cfg.Policy = policy.DefaultConfig()
	cfg.Policy.Location = time.UTC
	if mod != nil {
		mod(&cfg)
	}
	h := &sysHarness{clk: clock.NewFake(sysT0), prov: &seqProvider{}, paths: p, lastAct: map[string]time.Time{}}
	o := SystemOptions{
		Paths: p, Config: cfg, Provider: h.prov, Model: "m",
		Post: func(_ context.Context, m spine.Message) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.posted = append(h.posted, m)
			return nil
		},
		Sessions: func(_ context.Context, since time.Time) ([]session.Summary, error) {
			return []session.Summary{{Conversation: "telegram:42", Channel: "telegram", ChatID: "42", LastActivity: sysT0.Add(-time.Minute),
				LastUser: "what's on today?", LastUserAt: sysT0.Add(-2 * time.Minute)}}, nil
		},
		LastActivity: func(_ context.Context, s string) (time.Time, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			v, ok := h.lastAct[s]
			return v, ok
		},
		OnDelivered: func(_ context.Context, d executor.Delivery) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.observed = append(h.observed, d)
		},
		Clock: h.clk,
	}
	if opt != nil {
		opt(&o)
	}
	var err error
	if h.sys, err = NewSystem(o); err != nil {
		t.Fatal(err)
	}
	return h
}

// menuOnLate turns the menu on; RunDiscovery offers it, so the daily run
// inside a tick (which would consume the planner's script) is kept late.
func menuOnLate(c *Config) { c.Discovery, c.DiscoveryHour = true, 23 }

func userTurn(content string) spine.TurnRequest {
	return spine.TurnRequest{Origin: spine.OriginUser, Channel: "telegram", ChatID: "42", Content: content}
}

// offerMenu runs task discovery with a fixed menu and returns it.
func offerMenu(t *testing.T, h *sysHarness, options string) executor.PendingDecision {
	t.Helper()
	menu := &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: `{"options":` + options + `}`}}}
	h.sys.Discoverer.Provider = providerFunc(func() (*llm.Response, error) { return menu, nil })
	if res := h.sys.Runner.RunDiscovery(context.Background()); !res.Delivered {
		t.Fatalf("menu not delivered: %+v", res)
	}
	pd, ok, err := h.sys.Pending.Active(context.Background(), "telegram:42")
	if err != nil || !ok {
		t.Fatalf("no open menu: %v", err)
	}
	return pd
}

func ledgerFires(t *testing.T, st *statefile.Store) []struct{ Session, Action, Topic string } {
	t.Helper()
	var fires []struct{ Session, Action, Topic string }
	if err := st.View(context.Background(), func(tx *statefile.Tx) error {
		stored, err := policy.StoredFires(tx)
		for _, f := range stored {
			fires = append(fires, struct{ Session, Action, Topic string }{f.Session, f.Action, f.Topic})
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return fires
}

// §2.1: a pick answered right after its menu is executed: the menu's own
// session cooldown and topic quota do not hold it back, and the menu is
// closed once it ran.
func TestPickIsExecutedUnderDefaultPolicy(t *testing.T) {
	h := newDefaultSys(t, menuOnLate, nil)
	ctx := context.Background()
	pd := offerMenu(t, h, `[{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft: Dear HMRC, ..."}]`)
	h.clk.Advance(2 * time.Minute)

	handled, reply := h.sys.Consumer.Hook(ctx, userTurn("1"))
	if !handled || !strings.Contains(reply, "Here is a draft: Dear HMRC") {
		t.Fatalf("pick not executed: handled=%v reply=%q", handled, reply)
	}
	h.sys.Injector.Settle("telegram:42", true)
	if _, ok, _ := h.sys.Pending.Active(ctx, "telegram:42"); ok {
		t.Fatal("menu still open after its pick ran")
	}
	all, _ := h.sys.Pending.List(ctx)
	if got := all[len(all)-1]; got.ID != pd.ID || got.State != executor.StateDone || got.Picked != 1 {
		t.Fatalf("menu %+v", got)
	}
	recs, _ := h.sys.Feedback.Nudges(10)
	if len(recs) != 2 || recs[0].Action != policy.ActionInject || recs[0].NudgeID == "" || !strings.Contains(recs[0].Content, "Dear HMRC") {
		t.Fatalf("pick not tracked for feedback: %+v", recs)
	}
	// The answer is not a new nudge on the menu's topic: tomorrow's and the
	// following days' menus still have their topic quota.
	for day := 1; day <= 4; day++ {
		h.clk.Advance(24 * time.Hour)
		offerMenu(t, h, `[{"title":"Draft the tax email","kind":"reply","reply":"Draft `+string(rune('0'+day))+`"}]`)
		if handled, reply := h.sys.Consumer.Hook(ctx, userTurn("1")); !handled || !strings.Contains(reply, "Draft") {
			t.Fatalf("day %d: %v %q", day, handled, reply)
		}
		h.sys.Injector.Settle("telegram:42", true)
	}
}

// §2.1: a denied pick tells the owner which layer refused and why, leaves
// the menu open, and a later retry runs it.
func TestDeniedPickSaysWhyAndCanBeRetried(t *testing.T) {
	var mu sync.Mutex
	var started []string
	h := newDefaultSys(t, menuOnLate, func(o *SystemOptions) {
		o.Spawn = func(_ context.Context, task, ch, chat string) error {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, task)
			return nil
		}
	})
	ctx := context.Background()
	// A Sentinel spawn uses this hour's spawn quota (1/hour by default).
	h.prov.push(decisionJSON("spawn_agent", "", map[string]any{"spawn_task": "Check the train strikes."}))
	if out := h.sys.Runner.TickOnce(ctx); !out.Delivered() {
		t.Fatalf("%+v", out)
	}
	pd := offerMenu(t, h, `[{"title":"Compare Friday trains","kind":"spawn","task":"Compare Friday trains to Leeds."}]`)
	h.clk.Advance(5 * time.Minute)

	handled, reply := h.sys.Consumer.Hook(ctx, userTurn("1"))
	if !handled || !strings.Contains(reply, policy.LayerHourQuota) || !strings.Contains(reply, "hour quota used") {
		t.Fatalf("denial does not say why: handled=%v reply=%q", handled, reply)
	}
	if cur, ok, _ := h.sys.Pending.Active(ctx, "telegram:42"); !ok || cur.ID != pd.ID {
		t.Fatal("a denied pick closed its menu")
	}
	h.clk.Advance(time.Hour)
	handled, reply = h.sys.Consumer.Hook(ctx, userTurn("1"))
	if !handled || !strings.Contains(reply, "Compare Friday trains") {
		t.Fatalf("retry: handled=%v reply=%q", handled, reply)
	}
	if _, ok, _ := h.sys.Pending.Active(ctx, "telegram:42"); ok {
		t.Fatal("menu still open after the retried pick ran")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(started) != 2 || started[1] != "Compare Friday trains to Leeds." {
		t.Fatalf("spawned %v", started)
	}
}

// §2.2: the same inject decided on three ticks is queued once, charged
// when queued, and one reply carries one copy.
func TestInjectQueuedOnceAndChargedWhenQueued(t *testing.T) {
	h := newDefaultSys(t, nil, nil)
	ctx := context.Background()
	const msg = "Passport office closes at 16:00."
	for i := range 3 {
		h.prov.push(decisionJSON("nudge_inject", msg, map[string]any{"target_session": "telegram:42", "topic": "passport"}))
		out := h.sys.Runner.TickOnce(ctx)
		if i == 0 && (out.Result == nil || !out.Result.Queued) {
			t.Fatalf("tick %d: %+v", i, out)
		}
		if i == 0 {
			if used := h.sys.Policy.SnapshotState().HourUsed; used != 1 {
				t.Fatalf("inject not charged when queued: hour used %d", used)
			}
		}
		h.clk.Advance(time.Minute)
	}
	pend, err := h.sys.Injector.Pending(ctx)
	if err != nil || len(pend["telegram:42"]) != 1 {
		t.Fatalf("queue %+v %v", pend, err)
	}
	got := h.sys.Injector.Modify("telegram:42", "Sunny, 14°C.")
	if n := strings.Count(got, msg); n != 1 {
		t.Fatalf("reply carries %d copies: %q", n, got)
	}
	h.sys.Injector.Settle("telegram:42", true)
	recs, _ := h.sys.Feedback.Nudges(10)
	if len(recs) != 1 || recs[0].NudgeID == "" || recs[0].Action != policy.ActionInject {
		t.Fatalf("feedback %+v", recs)
	}
	if used := h.sys.Policy.SnapshotState().HourUsed; used != 1 {
		t.Fatalf("inject charged twice: hour used %d", used)
	}
}

// §2.2: a dismissal cooldown that began after the inject was queued holds
// it back when the next reply would carry it.
func TestInjectRecheckedWhenItRides(t *testing.T) {
	h := newDefaultSys(t, nil, nil)
	ctx := context.Background()
	h.prov.push(decisionJSON("nudge", "Water the plants.", map[string]any{"target_session": "telegram:42"}))
	first := h.sys.Runner.TickOnce(ctx)
	if !first.Delivered() {
		t.Fatalf("%+v", first)
	}
	h.clk.Advance(25 * time.Minute) // past the session cooldown
	h.prov.push(decisionJSON("nudge_inject", "Passport office closes at 16:00.", map[string]any{"target_session": "telegram:42"}))
	if out := h.sys.Runner.TickOnce(ctx); out.Result == nil || !out.Result.Queued {
		t.Fatalf("%+v", out)
	}
	if _, err := h.sys.RecordVerdict(ctx, first.NudgeID, feedback.EventDismissed, "telegram:42", "not now"); err != nil {
		t.Fatal(err)
	}
	if got := h.sys.Injector.Modify("telegram:42", "Sunny."); got != "Sunny." {
		t.Fatalf("inject rode a reply during a dismissal cooldown: %q", got)
	}
	h.sys.Injector.Settle("telegram:42", true)
	if pend, _ := h.sys.Injector.Pending(ctx); len(pend["telegram:42"]) != 1 {
		t.Fatalf("held-back inject lost: %+v", pend)
	}
	h.clk.Advance(2*time.Hour + time.Minute)
	if got := h.sys.Injector.Modify("telegram:42", "Sunny."); !strings.Contains(got, "Passport office") {
		t.Fatalf("inject not carried once the cooldown ended: %q", got)
	}
}

// §2.3: the session cooldown applies to the session a nudge resolves to,
// on every path, and the ledger records that session.
func TestSessionCooldownAfterTargetResolution(t *testing.T) {
	var slots []PlanSlot
	h := newDefaultSys(t, nil, func(o *SystemOptions) {
		o.PlanSlots = func(time.Time) []PlanSlot { return slots }
	})
	ctx := context.Background()
	h.prov.push(decisionJSON("nudge", "The plumber comes Thursday.", map[string]any{"topic": "plumber"}))
	if out := h.sys.Runner.TickOnce(ctx); !out.Delivered() {
		t.Fatalf("%+v", out)
	}
	fires := ledgerFires(t, h.sys.Store)
	if len(fires) != 1 || fires[0].Session != "telegram:42" {
		t.Fatalf("fire does not record the session it reached: %+v", fires)
	}
	h.clk.Advance(5 * time.Minute)
	now := h.clk.Now()
	cases := []struct {
		name  string
		setup func()
	}{
		{"scheduled slot", func() {
			slots = []PlanSlot{{ID: "water", Topic: "plants", Start: now, End: now.Add(time.Hour), Recurring: true, Message: "Water the plants."}}
		}},
		{"deadline fallback", func() {
			slots = []PlanSlot{{ID: "tax", Topic: "tax", Start: now, End: now.Add(time.Hour), Deadline: true, Priority: PriorityHigh, Message: "Tax return due today."}}
			// the planner is unavailable: the seq script is empty
		}},
		{"planner nudge", func() {
			slots = nil
			h.prov.push(decisionJSON("nudge", "Bins go out tonight.", map[string]any{"topic": "bins"}))
		}},
		{"defer", func() {
			slots = nil
			h.prov.push(decisionJSON("nudge_defer", "Confirm the dentist.", map[string]any{"topic": "dentist", "defer_condition": "later"}))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup()
			out := h.sys.Runner.TickOnce(ctx)
			if out.Verdict == nil || out.Verdict.Layer != policy.LayerSessionCooldown {
				t.Fatalf("route %s: verdict %+v result %+v", out.Route, out.Verdict, out.Result)
			}
		})
	}
	if n := h.postedN(); n != 1 {
		t.Fatalf("%d messages posted", n)
	}
}

// §2.7: a picked tool option runs through the agent's tools (a plain
// ToolRunner), passes the policy as the owner's answer, is tracked for
// feedback, and a failed run leaves the menu open for a retry.
func TestPickRunsToolThroughPolicy(t *testing.T) {
	type call struct {
		name string
		args string
	}
	var mu sync.Mutex
	var calls []call
	fail := true
	h := newDefaultSys(t, nil, func(o *SystemOptions) {
		o.Tools = func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, call{name, string(args)})
			if turn, ok := tools.TurnFrom(ctx); !ok || turn.Conversation != "telegram:42" || turn.Origin != spine.OriginUser {
				return "", errors.New("tool runs outside the owner's turn")
			}
			if fail {
				return "", errors.New("weather service timed out")
			}
			return "Leeds: 14°C, dry all afternoon.", nil
		}
	})
	ctx := context.Background()
	pd, err := h.sys.Pending.Put(ctx, executor.PendingDecision{Session: "telegram:42", Title: "Today?", Topic: "task-discovery", Priority: policy.PriorityLow,
		Options: []executor.Option{{Title: "Check the Leeds weather", Kind: executor.KindTool, Tool: "weather", Args: json.RawMessage(`{"city":"Leeds"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if res := h.sys.Dispatcher.DispatchOptions(ctx, pd); !res.Delivered {
		t.Fatalf("%+v", res)
	}
	if menu := h.posted[0].Content; !strings.Contains(menu, "(runs weather)") {
		t.Fatalf("menu hides the tool it runs: %q", menu)
	}
	h.clk.Advance(time.Minute)

	handled, reply := h.sys.Consumer.Hook(ctx, userTurn("1"))
	if !handled || !strings.Contains(reply, "weather service timed out") || !strings.Contains(reply, "reply 1 to try again") {
		t.Fatalf("failed tool: handled=%v reply=%q", handled, reply)
	}
	if _, ok, _ := h.sys.Pending.Active(ctx, "telegram:42"); !ok {
		t.Fatal("a failed tool pick closed its menu")
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	handled, reply = h.sys.Consumer.Hook(ctx, userTurn("1"))
	if !handled || reply != "Leeds: 14°C, dry all afternoon." {
		t.Fatalf("tool pick: handled=%v reply=%q", handled, reply)
	}
	if _, ok, _ := h.sys.Pending.Active(ctx, "telegram:42"); ok {
		t.Fatal("menu open after its tool ran")
	}
	if len(calls) != 2 || calls[1] != (call{"weather", `{"city":"Leeds"}`}) {
		t.Fatalf("calls %+v", calls)
	}
	recs, _ := h.sys.Feedback.Nudges(10)
	if len(recs) != 2 || recs[0].Action != policy.ActionTool || recs[0].NudgeID == "" || recs[0].Session != "telegram:42" || !strings.Contains(recs[0].Content, "14°C") {
		t.Fatalf("tool pick not tracked: %+v", recs)
	}
}

// §2.10: a spawn's result reaches the owner through the dispatcher, under
// the spawn's nudge ID: posted to the resolved target, reported to the
// runtime's observer (which records it in the owner's session) and logged
// as dispatched for feedback — also when the micro-agent answers before
// the spawn call returned.
func TestSpawnResultGoesThroughDispatcher(t *testing.T) {
	for _, sync := range []bool{false, true} {
		name := "async result"
		if sync {
			name = "result before the spawn returned"
		}
		t.Run(name, func(t *testing.T) {
			var done executor.SpawnDone
			h := newDefaultSys(t, nil, func(o *SystemOptions) {
				o.RunAgent = func(ctx context.Context, task string, d executor.SpawnDone) error {
					if sync {
						d(ctx, "Trains to Leeds on Friday: 07:04, 08:34 (cheapest, £42).", nil)
						return nil
					}
					done = d
					return nil
				}
			})
			ctx := context.Background()
			h.prov.push(decisionJSON("spawn_agent", "", map[string]any{"spawn_task": "Compare Friday trains to Leeds.", "topic": "leeds-trip"}))
			out := h.sys.Runner.TickOnce(ctx)
			if !out.Delivered() || out.NudgeID == "" {
				t.Fatalf("%+v", out)
			}
			if !sync {
				if recs, _ := h.sys.Feedback.Nudges(10); len(recs) != 0 || h.postedN() != 0 {
					t.Fatalf("reported before the result arrived: %+v", recs)
				}
				h.clk.Advance(3 * time.Minute)
				done(ctx, "Trains to Leeds on Friday: 07:04, 08:34 (cheapest, £42).", nil)
			}
			if h.postedN() != 1 || h.posted[0].ChatID != "42" || !strings.Contains(h.posted[0].Content, "£42") || !h.posted[0].Proactive {
				t.Fatalf("posted %+v", h.posted)
			}
			recs, _ := h.sys.Feedback.Nudges(10)
			if len(recs) != 1 || recs[0].NudgeID != out.NudgeID || recs[0].Action != policy.ActionSpawn || recs[0].Session != "telegram:42" ||
				recs[0].Topic != "leeds-trip" || !strings.Contains(recs[0].Content, "£42") {
				t.Fatalf("feedback %+v", recs)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.observed) != 1 || h.observed[0].NudgeID != out.NudgeID || h.observed[0].Session != "telegram:42" || !strings.Contains(h.observed[0].Content, "£42") {
				t.Fatalf("the runtime did not see the result to record it in the session: %+v", h.observed)
			}
		})
	}
}

// §2.10: a failed micro-agent still tells the owner, through the same path.
func TestSpawnFailureReported(t *testing.T) {
	var done executor.SpawnDone
	h := newDefaultSys(t, nil, func(o *SystemOptions) {
		o.RunAgent = func(_ context.Context, _ string, d executor.SpawnDone) error { done = d; return nil }
	})
	ctx := context.Background()
	h.prov.push(decisionJSON("spawn_agent", "", map[string]any{"spawn_task": "Compare Friday trains to Leeds."}))
	if out := h.sys.Runner.TickOnce(ctx); !out.Delivered() {
		t.Fatalf("%+v", out)
	}
	done(ctx, "", errors.New("model unavailable"))
	if h.postedN() != 1 || !strings.Contains(h.posted[0].Content, "couldn't finish") || !strings.Contains(h.posted[0].Content, "model unavailable") {
		t.Fatalf("posted %+v", h.posted)
	}
}
