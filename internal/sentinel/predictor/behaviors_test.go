package predictor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/statefile"
)

const childEnv = "PREDICTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "behaviors" {
		os.Exit(behaviorsChild())
	}
	goleak.VerifyTestMain(m)
}

type fakeProvider struct {
	mu    sync.Mutex
	calls []llm.Request
	reply func(req llm.Request) (*llm.Response, error)
}

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	return f.reply(req)
}

func (f *fakeProvider) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func toolReply(args string) func(llm.Request) (*llm.Response, error) {
	return func(llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: RecordBehaviorsTool, Arguments: args}}}, nil
	}
}

// source is an in-memory message store with session.Store.Since semantics.
type source struct {
	mu   sync.Mutex
	msgs []Message
	err  error
}

func (s *source) add(m ...Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m...)
}

func (s *source) since(_ context.Context, t time.Time, limit int) ([]Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	var out []Message
	for _, m := range s.msgs {
		if m.At.After(t) && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

type rig struct {
	clk   *clock.Fake
	store *statefile.Store
	prov  *fakeProvider
	src   *source
	path  string
	last  time.Time // owner's last activity
	ex    *BehaviorsExtractor
}

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

func newRig(t *testing.T, mod func(*BehaviorsOptions)) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{clk: clock.NewFake(t0), prov: &fakeProvider{}, src: &source{}, path: filepath.Join(dir, "user_memory", "behaviors.md")}
	var err error
	r.store, err = statefile.Open(filepath.Join(dir, "state.json"), statefile.Options{Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	o := BehaviorsOptions{
		Path: r.path, Store: r.store, Provider: r.prov, Model: "m", Messages: r.src.since,
		LastOwnerActivity: func(context.Context) (time.Time, error) { return r.last, nil },
		Idle:              30 * time.Minute, Interval: 6 * time.Hour, Clock: r.clk,
	}
	if mod != nil {
		mod(&o)
	}
	r.ex, err = NewBehaviorsExtractor(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) state(t *testing.T) BehaviorsState {
	t.Helper()
	st, err := r.ex.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (r *rig) file(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(r.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func msg(at time.Time, role, text string) Message {
	return Message{At: at, Conversation: "telegram:42", Role: role, Content: text}
}

func eventsJSON(evs ...string) string { return `{"events":[` + strings.Join(evs, ",") + `]}` }

func ev(at time.Time, kind, summary string, conf float64) string {
	return fmt.Sprintf(`{"time":%q,"kind":%q,"summary":%q,"confidence":%g}`, at.Format(time.RFC3339), kind, summary, conf)
}

func TestBehaviorsExtractorRun(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	m1 := t0.Add(-3 * time.Hour)
	m2 := t0.Add(-2 * time.Hour)
	r.src.add(msg(m1, "user", "I'm off to the gym, like every Thursday"), msg(m1, "assistant", "Have fun!"),
		msg(m2, "user", "remind me: dinner with Anna on Saturday"))
	r.last = m2
	r.prov.reply = toolReply(eventsJSON(
		ev(m1, "habit", "Owner goes to the gym on Thursdays", 0.9),
		ev(m2, "plan", "Owner has dinner with Anna on Saturday", 0.8),
		ev(m2, "mood", "Owner seems tired", 0.3), // too weak to record
	))

	res := r.ex.MaybeRun(ctx)
	if !res.Ran || len(res.Events) != 2 || res.Messages != 3 || res.Err != "" {
		t.Fatalf("result = %+v", res)
	}
	req := r.prov.calls[0]
	if req.ToolChoice != RecordBehaviorsTool || len(req.Tools) != 1 || req.Tools[0].Name != RecordBehaviorsTool || req.Model != "m" || !req.NoReasoning {
		t.Fatalf("request = %+v", req)
	}
	if u := req.Messages[1].Content; !strings.Contains(u, "owner: I'm off to the gym") || !strings.Contains(u, "raven: Have fun!") {
		t.Fatalf("prompt = %q", u)
	}
	want := "- " + m1.Format(time.RFC3339) + " [habit] Owner goes to the gym on Thursdays (confidence 0.90)\n" +
		"- " + m2.Format(time.RFC3339) + " [plan] Owner has dinner with Anna on Saturday (confidence 0.80)\n"
	if got := r.file(t); got != behaviorsHeader+want {
		t.Fatalf("behaviors.md =\n%s\nwant\n%s", got, behaviorsHeader+want)
	}
	st := r.state(t)
	if !st.HighWater.Equal(m2) || !st.LastRun.Equal(t0) || st.LastEvents != 2 || st.LastError != "" {
		t.Fatalf("state = %+v", st)
	}

	// Within the interval nothing runs, even with new messages.
	m3 := t0.Add(time.Hour)
	r.clk.Set(m3.Add(time.Hour))
	r.src.add(msg(m3, "user", "started learning Spanish"))
	if res := r.ex.MaybeRun(ctx); res.Skipped != SkipInterval || r.prov.n() != 1 {
		t.Fatalf("within interval: %+v, calls %d", res, r.prov.n())
	}
	// After it, only the new message is read, and lines are appended.
	r.clk.Set(t0.Add(6 * time.Hour))
	r.last = m3
	r.prov.reply = toolReply(eventsJSON(ev(m3, "activity", "Owner started learning Spanish", 0.7)))
	res = r.ex.MaybeRun(ctx)
	if !res.Ran || res.Messages != 1 || len(res.Events) != 1 {
		t.Fatalf("second run = %+v", res)
	}
	if u := r.prov.calls[1].Messages[1].Content; strings.Contains(u, "gym") || !strings.Contains(u, "Spanish") {
		t.Fatalf("second prompt re-read old messages: %q", u)
	}
	if got := r.file(t); strings.Count(got, "\n- ") != 3 || !strings.HasSuffix(got, "[activity] Owner started learning Spanish (confidence 0.70)\n") || strings.Count(got, "# Behaviors") != 1 {
		t.Fatalf("behaviors.md =\n%s", got)
	}
}

func TestBehaviorsExtractorGates(t *testing.T) {
	ctx := context.Background()
	m1 := t0.Add(-time.Hour)
	tests := []struct {
		name      string
		mod       func(*BehaviorsOptions)
		setup     func(r *rig)
		skipped   string
		calls     int
		claimed   bool // LastRun set
		highWater time.Time
		lastError bool
	}{
		{
			name:    "owner active",
			setup:   func(r *rig) { r.last = t0.Add(-10 * time.Minute) },
			skipped: SkipOwnerActive,
		},
		{
			name:    "no model",
			mod:     func(o *BehaviorsOptions) { o.Provider = nil },
			skipped: SkipNoModel,
		},
		{
			name: "owner activity unknown",
			mod: func(o *BehaviorsOptions) {
				o.LastOwnerActivity = func(context.Context) (time.Time, error) { return time.Time{}, errors.New("db locked") }
			},
			skipped: SkipFailed,
		},
		{
			name:    "nothing new",
			setup:   func(r *rig) { r.src.msgs = nil },
			skipped: SkipNoMessages, claimed: true,
		},
		{
			name:    "messages unavailable",
			setup:   func(r *rig) { r.src.err = errors.New("no db") },
			skipped: SkipFailed, claimed: true, lastError: true,
		},
		{
			name: "provider down: the batch is retried later",
			setup: func(r *rig) {
				r.prov.reply = func(llm.Request) (*llm.Response, error) { return nil, errors.New("503") }
			},
			skipped: SkipFailed, calls: 1, claimed: true, lastError: true,
		},
		{
			name:  "invalid answer: the batch is passed over",
			setup: func(r *rig) { r.prov.reply = toolReply(`{"events":[],"extra":1}`) },
			calls: 1, claimed: true, highWater: m1, lastError: true,
		},
		{
			name: "no tool call",
			setup: func(r *rig) {
				r.prov.reply = func(llm.Request) (*llm.Response, error) { return &llm.Response{Content: "none"}, nil }
			},
			calls: 1, claimed: true, highWater: m1, lastError: true,
		},
		{
			name:  "empty answer is fine",
			setup: func(r *rig) { r.prov.reply = toolReply(`{"events":[]}`) },
			calls: 1, claimed: true, highWater: m1,
		},
		{
			name: "a peer ran this interval",
			setup: func(r *rig) {
				if err := r.store.Update(context.Background(), func(tx *statefile.Tx) error {
					return tx.Put(BehaviorsSection, BehaviorsState{LastRun: t0.Add(-time.Hour)})
				}); err != nil {
					panic(err)
				}
			},
			skipped: SkipInterval, claimed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.mod)
			r.src.add(msg(m1, "user", "went running"))
			r.last = m1
			r.prov.reply = toolReply(eventsJSON())
			if tc.setup != nil {
				tc.setup(r)
			}
			res := r.ex.MaybeRun(ctx)
			if res.Skipped != tc.skipped || r.prov.n() != tc.calls {
				t.Fatalf("result = %+v, calls = %d; want skipped %q, %d calls", res, r.prov.n(), tc.skipped, tc.calls)
			}
			st := r.state(t)
			if claimed := !st.LastRun.IsZero(); claimed != tc.claimed {
				t.Fatalf("claimed = %v, want %v (%+v)", claimed, tc.claimed, st)
			}
			if !st.HighWater.Equal(tc.highWater) || (st.LastError != "") != tc.lastError {
				t.Fatalf("state = %+v, want high water %s, error %v", st, tc.highWater, tc.lastError)
			}
			if r.file(t) != "" {
				t.Fatalf("behaviors.md written: %q", r.file(t))
			}
		})
	}
}

func TestBehaviorsRetryAfterProviderError(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	m1 := t0.Add(-time.Hour)
	r.src.add(msg(m1, "user", "went running"))
	r.last = m1
	r.prov.reply = func(llm.Request) (*llm.Response, error) { return nil, errors.New("timeout") }
	r.ex.MaybeRun(ctx)
	r.clk.Advance(6 * time.Hour)
	r.prov.reply = toolReply(eventsJSON(ev(m1, "activity", "Owner went running", 0.9)))
	if res := r.ex.MaybeRun(ctx); !res.Ran || len(res.Events) != 1 || r.prov.n() != 2 {
		t.Fatalf("retry = %+v, calls %d", res, r.prov.n())
	}
}

func TestBehaviorsBatchCut(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, func(o *BehaviorsOptions) { o.MaxMessages = 3 })
	a, b, c := t0.Add(-3*time.Hour), t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	// A turn is stored under one time: b's group straddles the page limit.
	r.src.add(msg(a, "user", "one"), msg(b, "user", "two"), msg(b, "assistant", "two-reply"), msg(b, "user", "two-more"), msg(c, "user", "three"))
	r.last = c
	r.prov.reply = toolReply(eventsJSON())
	if res := r.ex.MaybeRun(ctx); res.Messages != 1 {
		t.Fatalf("first batch = %+v, want only the message before the split group", res)
	}
	if st := r.state(t); !st.HighWater.Equal(a) {
		t.Fatalf("high water = %s, want %s", st.HighWater, a)
	}
	r.clk.Advance(6 * time.Hour)
	r.ex.MaybeRun(ctx)
	if u := r.prov.calls[1].Messages[1].Content; !strings.Contains(u, "two-more") || strings.Contains(u, "one") {
		t.Fatalf("second batch = %q", u)
	}
}

func TestCutPoint(t *testing.T) {
	at := func(ms ...int) []Message {
		var out []Message
		for _, m := range ms {
			out = append(out, Message{At: t0.Add(time.Duration(m) * time.Minute)})
		}
		return out
	}
	tests := []struct {
		name     string
		msgs     []Message
		n        int
		pageFull bool
		want     int
	}{
		{"all, page not full", at(1, 2, 2), 3, false, 3},
		{"all, page full: last group may continue", at(1, 2, 2), 3, true, 1},
		{"budget cut on a boundary", at(1, 2, 3), 2, false, 2},
		{"budget cut inside a group", at(1, 2, 2, 3), 2, false, 1},
		{"one group fills everything", at(2, 2, 2), 2, true, 0},
		{"nothing", nil, 0, false, 0},
	}
	for _, tc := range tests {
		if got := cutPoint(tc.msgs, tc.n, tc.pageFull); got != tc.want {
			t.Errorf("%s: cutPoint = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestParseBehaviors(t *testing.T) {
	from, to := t0.Add(-time.Hour), t0
	ok := ev(t0.Add(-30*time.Minute), "plan", "Owner plans a trip", 0.8)
	tests := []struct {
		name    string
		resp    *llm.Response
		want    int
		wantErr bool
	}{
		{"valid", resp(eventsJSON(ok)), 1, false},
		{"unknown top-level field", resp(`{"events":[],"note":"x"}`), 0, true},
		{"unknown event field", resp(`{"events":[{"time":"2026-11-30T19:30:00Z","kind":"plan","summary":"s","confidence":0.9,"tags":[]}]}`), 0, true},
		{"not json", resp(`events: none`), 0, true},
		{"trailing data", resp(`{"events":[]} {}`), 0, true},
		{"events missing", resp(`{}`), 0, true},
		{"other tool", &llm.Response{ToolCalls: []llm.ToolCall{{Name: "planner_decision", Arguments: "{}"}}}, 0, true},
		{"bad kind dropped", resp(eventsJSON(ok, ev(t0, "gossip", "x", 0.9))), 1, false},
		{"time outside the batch dropped", resp(eventsJSON(ok, ev(t0.Add(-48*time.Hour), "plan", "x", 0.9))), 1, false},
		{"bad time dropped", resp(eventsJSON(ok, `{"time":"yesterday","kind":"plan","summary":"x","confidence":0.9}`)), 1, false},
		{"confidence out of range dropped", resp(eventsJSON(ok, ev(t0, "plan", "x", 1.5))), 1, false},
		{"missing confidence dropped", resp(eventsJSON(ok, `{"time":"2026-11-30T19:30:00Z","kind":"plan","summary":"x"}`)), 1, false},
		{"empty summary dropped", resp(eventsJSON(ok, ev(t0, "plan", "  \n ", 0.9))), 1, false},
		{"weak left out", resp(eventsJSON(ok, ev(t0, "plan", "x", 0.2))), 1, false},
		{"bounded", resp(eventsJSON(ok, ok, ok, ok, ok)), 3, false},
	}
	for _, tc := range tests {
		got, err := ParseBehaviors(tc.resp, from, to, 3, 0.5, nil)
		if (err != nil) != tc.wantErr || len(got) != tc.want {
			t.Errorf("%s: got %d events, err %v; want %d, err %v", tc.name, len(got), err, tc.want, tc.wantErr)
		}
	}
	got, _ := ParseBehaviors(resp(eventsJSON(ev(t0, "habit", "Owner\nruns   daily "+strings.Repeat("x", 300), 1))), from, to, 3, 0.5, nil)
	if len(got) != 1 || strings.Contains(got[0].Summary, "\n") || len([]rune(got[0].Summary)) > summaryMax {
		t.Fatalf("summary not normalised: %+v", got)
	}
}

func resp(args string) *llm.Response {
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: RecordBehaviorsTool, Arguments: args}}}
}

func TestBehaviorsToolSchemaIsJSON(t *testing.T) {
	b, err := json.Marshal(BehaviorsTool(5).Parameters)
	if err != nil || !strings.Contains(string(b), `"additionalProperties":false`) || !strings.Contains(string(b), `"maxItems":5`) {
		t.Fatalf("schema = %s, %v", b, err)
	}
}

// TestBehaviorsTwoProcesses runs several real processes on one data dir at
// the same instant: exactly one extracts.
func TestBehaviorsTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([]*strings.Builder, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
		cmds[i].Env = append(os.Environ(), childEnv+"=behaviors", "PREDICTOR_TEST_DIR="+dir)
		outs[i] = &strings.Builder{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		if strings.Contains(outs[i].String(), "ran=true") {
			ran++
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	beh, _ := os.ReadFile(filepath.Join(dir, "behaviors.md"))
	if ran != 1 || strings.Count(string(calls), "call\n") != 1 || strings.Count(string(beh), "[habit]") != 1 {
		t.Fatalf("ran=%d calls=%q behaviors=%q", ran, calls, beh)
	}
}

func behaviorsChild() int {
	dir := os.Getenv("PREDICTOR_TEST_DIR")
	store, err := statefile.Open(filepath.Join(dir, "state.json"), statefile.Options{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	m1 := t0.Add(-time.Hour)
	prov := &fakeProvider{reply: func(llm.Request) (*llm.Response, error) {
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if _, err := f.WriteString("call\n"); err != nil {
			return nil, err
		}
		return resp(eventsJSON(ev(m1, "habit", "Owner runs in the evening", 0.9))), nil
	}}
	src := &source{msgs: []Message{msg(m1, "user", "back from my evening run")}}
	ex, err := NewBehaviorsExtractor(BehaviorsOptions{
		Path: filepath.Join(dir, "behaviors.md"), Store: store, Provider: prov, Messages: src.since,
		Clock: clock.NewFake(t0),
	})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	res := ex.MaybeRun(context.Background())
	fmt.Printf("ran=%v skipped=%s err=%s\n", res.Ran, res.Skipped, res.Err)
	if res.Err != "" {
		return 1
	}
	return 0
}
