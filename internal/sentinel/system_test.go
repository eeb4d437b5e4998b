package sentinel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// seqProvider answers planner calls with decisions in order and records
// every request.
type seqProvider struct {
	mu   sync.Mutex
	args []string
	reqs []llm.Request
}

func (p *seqProvider) push(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append(p.args, args...)
}

func (p *seqProvider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	if len(p.args) == 0 {
		return nil, errors.New("script exhausted")
	}
	a := p.args[0]
	p.args = p.args[1:]
	return toolResp(a), nil
}
func (p *seqProvider) Name() string { return "seq" }

func (p *seqProvider) lastPrompt() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reqs[len(p.reqs)-1]
	return r.Messages[len(r.Messages)-1].Content
}

type sysHarness struct {
	sys      *System
	clk      *clock.Fake
	prov     *seqProvider
	paths    Paths
	mu       sync.Mutex
	posted   []spine.Message
	spawned  []string
	observed []executor.Delivery
	lastAct  map[string]time.Time
}

func (h *sysHarness) postedN() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.posted)
}

func roomyPolicy() policy.Config {
	c := policy.DefaultConfig()
	c.Location = time.UTC
	c.SessionCooldown = 0
	c.DayQuota, c.HourQuota, c.SpawnDayQuota, c.SpawnHourQuota = 100, 100, 100, 100
	c.TopicHourQuota, c.TopicDayQuota, c.TopicWeekQuota = 100, 100, 100
	return c
}

// Tuesday 2025-03-04 10:00 UTC.
var sysT0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

func newSysHarness(t *testing.T, mod func(*Config)) *sysHarness {
	t.Helper()
	p := testPaths(t.TempDir())
	cfg := DefaultConfig()
	cfg.Discovery = false // the daily menu would eat the planner script; tests that want it turn it on
	cfg.Policy = roomyPolicy()
	if mod != nil {
		mod(&cfg)
	}
	h := &sysHarness{clk: clock.NewFake(sysT0), prov: &seqProvider{}, paths: p, lastAct: map[string]time.Time{}}
	sessions := func(_ context.Context, since time.Time) ([]session.Summary, error) {
		return []session.Summary{{Conversation: "telegram:42", Channel: "telegram", ChatID: "42", LastActivity: sysT0.Add(-time.Minute),
			LastUser: "what's on today?", LastUserAt: sysT0.Add(-2 * time.Minute)}}, nil
	}
	var err error
	h.sys, err = NewSystem(SystemOptions{
		Paths: p, Config: cfg, Provider: h.prov, Model: "m",
		Post: func(_ context.Context, m spine.Message) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.posted = append(h.posted, m)
			return nil
		},
		Sessions: sessions,
		LastActivity: func(_ context.Context, s string) (time.Time, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			v, ok := h.lastAct[s]
			return v, ok
		},
		Spawn: func(_ context.Context, task, ch, chat string) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.spawned = append(h.spawned, task+"→"+ch+":"+chat)
			return nil
		},
		OnDelivered: func(_ context.Context, d executor.Delivery) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.observed = append(h.observed, d)
		},
		Clock: h.clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func decisionJSON(action, msg string, extra map[string]any) string {
	m := map[string]any{"action": action, "reason": "test", "proactivity_score": 0.9, "priority": "medium"}
	if msg != "" {
		m["nudge_message"] = msg
	}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Every delivered path lands in feedback.jsonl as dispatched, under the
// policy's fire ID, and the extra observer sees it too.
func TestSystemRecordsEveryDeliveryForFeedback(t *testing.T) {
	h := newSysHarness(t, nil)
	ctx := context.Background()
	type step struct {
		name     string
		decision string
		deliver  func(t *testing.T) // completes a queued delivery
		action   string
		session  string
		content  string
	}
	steps := []step{
		{name: "dispatch", decision: decisionJSON("nudge", "The plumber comes Thursday.", map[string]any{"target_session": "telegram:42", "topic": "plumber"}),
			action: policy.ActionNudge, session: "telegram:42", content: "The plumber comes Thursday."},
		{name: "inject rides a reply", decision: decisionJSON("nudge_inject", "Passport office closes at 16:00.", map[string]any{"target_session": "telegram:42"}),
			deliver: func(t *testing.T) {
				if got := h.sys.Injector.Modify("telegram:42", "Sunny, 14°C."); !strings.Contains(got, "Passport office") {
					t.Fatalf("reply %q", got)
				}
				h.sys.Injector.Settle("telegram:42", true) // the reply reached the owner
			},
			action: policy.ActionInject, session: "telegram:42", content: "Passport office closes at 16:00."},
		{name: "defer dispatched once settled", decision: decisionJSON("nudge_defer", "Confirm the dentist for Friday.", map[string]any{"target_session": "telegram:42", "defer_condition": "after this thread"}),
			deliver: func(t *testing.T) {
				h.mu.Lock()
				h.lastAct["telegram:42"] = h.clk.Now()
				h.mu.Unlock()
				if res := h.sys.Defer.Poll(ctx); len(res) != 0 {
					t.Fatalf("dispatched while active: %+v", res)
				}
				h.clk.Advance(11 * time.Minute)
				if res := h.sys.Defer.Poll(ctx); len(res) != 1 || !res[0].Delivered {
					t.Fatalf("not dispatched after settling: %+v", res)
				}
			},
			action: policy.ActionDefer, session: "telegram:42", content: "Confirm the dentist for Friday."},
		{name: "spawn to the default target", decision: decisionJSON("spawn_agent", "", map[string]any{"spawn_task": "Compare Friday trains to Leeds."}),
			action: policy.ActionSpawn, session: "telegram:42", content: "Compare Friday trains to Leeds."},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.clk.Advance(time.Hour)
			h.prov.push(st.decision)
			out := h.sys.Runner.TickOnce(ctx)
			if out.Result == nil || !(out.Result.Delivered || out.Result.Queued) {
				t.Fatalf("tick: %+v", out)
			}
			if st.deliver != nil {
				st.deliver(t)
			}
			recs, err := h.sys.Feedback.Nudges(100)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != i+1 {
				t.Fatalf("%d dispatched records, want %d: %+v", len(recs), i+1, recs)
			}
			r := recs[0]
			if r.NudgeID == "" || r.Action != st.action || r.Session != st.session || r.Content != st.content || r.Source != feedback.SourceSentinel || r.Topic == "" || r.Priority != "medium" {
				t.Fatalf("record %+v", r)
			}
			if !r.Time.Equal(h.clk.Now()) {
				t.Fatalf("time %v, now %v", r.Time, h.clk.Now())
			}
			h.mu.Lock()
			n := len(h.observed)
			h.mu.Unlock()
			if n != i+1 {
				t.Fatalf("observer saw %d", n)
			}
		})
	}
	if !slices.Equal(h.spawned, []string{"Compare Friday trains to Leeds.→telegram:42"}) {
		t.Fatalf("spawned %v", h.spawned)
	}
}

func TestSystemTaskDiscoveryMenuIsTracked(t *testing.T) {
	h := newSysHarness(t, func(c *Config) { c.Discovery = true })
	// The discoverer calls the same provider with its own tool.
	menu := &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: `{"options":[{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."}]}`}}}
	sys := h.sys
	sys.Discoverer.Provider = providerFunc(func() (*llm.Response, error) { return menu, nil })
	res := sys.Runner.RunDiscovery(context.Background())
	if !res.Delivered || res.NudgeID == "" {
		t.Fatalf("%+v", res)
	}
	recs, _ := sys.Feedback.Nudges(5)
	if len(recs) != 1 || recs[0].NudgeID != res.NudgeID || recs[0].Topic != "task-discovery" || !strings.Contains(recs[0].Content, "Draft the tax email") {
		t.Fatalf("%+v", recs)
	}
}

type providerFunc func() (*llm.Response, error)

func (f providerFunc) Chat(context.Context, llm.Request) (*llm.Response, error) { return f() }
func (f providerFunc) Name() string                                             { return "func" }

// One function records verdicts for the tool and the CLI: the log and the
// policy move together, and an unknown ID changes neither.
func TestSystemRecordVerdictFeedsPolicy(t *testing.T) {
	h := newSysHarness(t, nil)
	ctx := context.Background()
	h.prov.push(decisionJSON("nudge", "Water the plants.", map[string]any{"target_session": "telegram:42"}))
	out := h.sys.Runner.TickOnce(ctx)
	if !out.Delivered() {
		t.Fatalf("%+v", out)
	}
	before := h.sys.Policy.SnapshotState()

	_, err := h.sys.RecordVerdict(ctx, "n-unknown", feedback.EventDismissed, "", "")
	if !errors.Is(err, feedback.ErrUnknownNudge) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := h.sys.RecordVerdict(ctx, out.NudgeID, "maybe", "", ""); err == nil {
		t.Fatal("bad verdict accepted")
	}
	if after := h.sys.Policy.SnapshotState(); !after.DismissalCooldownUntil.Equal(before.DismissalCooldownUntil) {
		t.Fatal("a refused verdict touched the policy")
	}

	// Through the tool, in an agent turn: the session comes from the turn.
	reg := tools.NewRegistry(h.sys.FeedbackTool())
	turn := tools.WithTurn(ctx, tools.TurnInfo{Origin: spine.OriginUser, Conversation: "telegram:42", Channel: "telegram", ChatID: "42"})
	msg, err := reg.Run(turn, llm.ToolCall{Name: feedback.ToolName, Arguments: fmt.Sprintf(`{"verdict":"dismissed","nudge_id":%q,"reason":"stop"}`, out.NudgeID)})
	if err != nil {
		t.Fatal(msg, err)
	}
	snap := h.sys.Policy.SnapshotState()
	if !snap.DismissalCooldownUntil.After(h.clk.Now()) {
		t.Fatalf("dismissal did not reach the policy: %+v", snap)
	}
	recs, _ := h.sys.Feedback.Nudges(1)
	if recs[0].Verdict != feedback.EventDismissed || recs[0].VerdictReason != "stop" {
		t.Fatalf("%+v", recs[0])
	}
	// The policy now denies a new nudge on the dismissal cooldown.
	h.clk.Advance(10 * time.Minute)
	h.prov.push(decisionJSON("nudge", "Something else entirely.", map[string]any{"target_session": "telegram:42"}))
	if out := h.sys.Runner.TickOnce(ctx); out.Verdict == nil || out.Verdict.Layer != policy.LayerDismissalCooldown {
		t.Fatalf("%+v", out.Verdict)
	}
}

// Each tick retunes the policy from the tracker's acceptance rate, and the
// tracker's log is trimmed once a day.
func TestSystemRetunesFromTrackerAndTrims(t *testing.T) {
	h := newSysHarness(t, nil)
	ctx := context.Background()
	old := feedback.Record{Time: sysT0.Add(-40 * 24 * time.Hour), Event: feedback.EventDispatched, NudgeID: "n-old"}
	if err := h.sys.Feedback.Append(ctx, old); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		id := fmt.Sprintf("n-%d", i)
		if err := h.sys.Feedback.Append(ctx, feedback.Record{Event: feedback.EventDispatched, NudgeID: id}); err != nil {
			t.Fatal(err)
		}
		if err := h.sys.Feedback.Append(ctx, feedback.Record{Event: feedback.EventDismissed, NudgeID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if m := h.sys.Policy.SnapshotState().Multiplier; m != 1 {
		t.Fatalf("start multiplier %v", m)
	}
	h.prov.push(decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	if m := h.sys.Policy.SnapshotState().Multiplier; m >= 1 {
		t.Fatalf("multiplier not tightened by a 0%% acceptance rate: %v", m)
	}
	if _, ok, _ := h.sys.Feedback.Lookup("n-old"); ok {
		t.Fatal("40-day-old record survived the daily trim")
	}
}

// The attention producers run before assembly, so the planner reads this
// tick's sections; a cold tick does not rewrite the file.
func TestSystemAttentionFeedsPlanner(t *testing.T) {
	h := newSysHarness(t, nil)
	ctx := context.Background()
	write(t, h.paths.Memory, "- tax return due 2025-03-06\n- [ ] renew passport\n")
	h.prov.push(decisionJSON("skip", "", nil), decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	prompt := h.prov.lastPrompt()
	for _, want := range []string{"## Deadlines", "2025-03-06 (in 2 days, memory): tax return due", "## Open loops", "renew passport"} {
		if !strings.Contains(prompt, want) {
			t.Fatalf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	st1, err := os.Stat(h.paths.Attention)
	if err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(3 * time.Hour) // same day: nothing changes
	h.sys.Runner.TickOnce(ctx)
	st2, _ := os.Stat(h.paths.Attention)
	if !os.SameFile(st1, st2) {
		t.Fatal("cold tick rewrote attention.md")
	}
}

func TestAttentionDefaultsAgreeWithAssembler(t *testing.T) {
	got := DefaultConfig().AttentionSections
	if !slices.Equal(got, attention.DefaultSections()) {
		t.Fatalf("config default %v, producers %v", got, attention.DefaultSections())
	}
	h := newSysHarness(t, nil)
	var names []string
	for _, p := range []attention.Producer{attention.Deadlines{}, attention.OpenLoops{}} {
		names = append(names, p.Section())
	}
	if !slices.Equal(names, attention.DefaultSections()) || h.sys.Attention == nil {
		t.Fatalf("producers %v", names)
	}
	off := newSysHarness(t, func(c *Config) { c.Attention = false })
	if off.sys.Attention != nil {
		t.Fatal("attention updater built while disabled")
	}
	off.prov.push(decisionJSON("skip", "", nil))
	off.sys.Runner.TickOnce(context.Background())
	if _, err := os.Stat(filepath.Join(off.paths.Attention)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("attention.md written while disabled")
	}
}

func TestActiveSessionsAdapter(t *testing.T) {
	at := sysT0.Add(-time.Hour)
	list := func(_ context.Context, since time.Time) ([]session.Summary, error) {
		if !since.Equal(sysT0) {
			return nil, errors.New("wrong since")
		}
		return []session.Summary{
			{Conversation: "telegram:1", Channel: "telegram", ChatID: "1", LastActivity: at, LastUser: "hi?", LastUserAt: at, LastAssistant: "yo"},
			{Channel: "webhook", ChatID: "7", LastActivity: at},
		}, nil
	}
	got, err := ActiveSessions(list)(context.Background(), sysT0)
	if err != nil {
		t.Fatal(err)
	}
	want := []ActiveSession{{Key: "telegram:1", LastActive: at, LastUser: "hi?", LastUserAt: at, LastAssistant: "yo"}, {Key: "webhook:7", LastActive: at}}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v", got)
	}
	if _, err := ActiveSessions(list)(context.Background(), sysT0.Add(time.Second)); err == nil {
		t.Fatal("error swallowed")
	}
	if ActiveSessions(nil) != nil {
		t.Fatal("nil lister must stay nil")
	}
}
