package heartbeat

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

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/wake"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeProvider answers every call with resp (or err) and records requests.
type fakeProvider struct {
	mu    sync.Mutex
	reqs  []llm.Request
	resp  *llm.Response
	err   error
	calls chan llm.Request // optional: receives every request
}

func (p *fakeProvider) Name() string { return "fake/model" }

func (p *fakeProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	if p.calls != nil {
		p.calls <- req
	}
	return p.resp, p.err
}

func (p *fakeProvider) n() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

func decide(args string) *llm.Response {
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: DecisionTool, Arguments: args}}}
}

// rig is a heartbeat wired to a real spine scheduler and hub.
type rig struct {
	svc       *Service
	prov      *fakeProvider
	submitted []spine.TurnRequest
	delivered []spine.Message
	mu        sync.Mutex
	sched     *spine.Scheduler
}

func newRig(t *testing.T, content *string, prov *fakeProvider, mod func(*Options)) *rig {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "HEARTBEAT.md")
	if content != nil {
		if err := os.WriteFile(path, []byte(*content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := &rig{prov: prov}
	hub := spine.NewHub(nil)
	for _, ch := range []string{"telegram", "webhook"} {
		hub.Register(ch, spine.OutletFunc(func(ctx context.Context, m spine.Message) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.delivered = append(r.delivered, m)
			return nil
		}))
	}
	r.sched = spine.NewScheduler(func(ctx context.Context, turn *spine.Turn) (string, error) {
		return "Done: " + turn.Request.Content[strings.LastIndex(turn.Request.Content, "\n")+1:], nil
	}, hub, spine.Options{})
	t.Cleanup(func() { r.sched.Shutdown(context.Background()) })
	opts := Options{
		Path:     path,
		Model:    "m",
		Clock:    clock.NewFake(t0),
		Channel:  "telegram",
		ChatID:   "42",
		Post:     hub.Post,
		Interval: 30 * time.Minute,
		Submit: func(req spine.TurnRequest) (*spine.Ticket, error) {
			r.mu.Lock()
			r.submitted = append(r.submitted, req)
			r.mu.Unlock()
			return r.sched.Submit(req)
		},
		LastRunPath: filepath.Join(dir, "last_run.json"),
	}
	if prov != nil {
		opts.Provider = prov
	}
	if mod != nil {
		mod(&opts)
	}
	svc, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

const activeFile = "# Heartbeat\n## Tasks\n- At 9:00 on weekdays, send me the day's agenda.\n"

func TestNoModelCallWithoutTasks(t *testing.T) {
	tests := []struct {
		name    string
		content *string
		route   Route
	}{
		{"missing file", nil, RouteNoFile},
		{"empty file", ptr(""), RouteEmpty},
		{"onboarding template", ptr(Template), RouteEmpty},
		{"headings comments blanks", ptr("# H\n\n<!--\n- not a task\n-->\n## T\n- [ ]\n"), RouteEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prov := &fakeProvider{resp: decide(`{"action":"run","tasks":"x","reason":"r"}`)}
			r := newRig(t, tc.content, prov, nil)
			out, err := r.svc.TickOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if prov.n() != 0 || out.ModelCalled {
				t.Fatalf("%d provider calls, want 0", prov.n())
			}
			if out.Route != tc.route || out.Action != ActionSkip || len(r.submitted) != 0 {
				t.Fatalf("outcome %+v, submitted %d", out, len(r.submitted))
			}
		})
	}
}

func TestPhases(t *testing.T) {
	tests := []struct {
		name        string
		resp        *llm.Response
		err         error
		route       Route
		wantSubmits int
		wantErr     bool
		reason      string
	}{
		{"skip", decide(`{"action":"skip","reason":"nothing due before 9:00"}`), nil, RouteSkip, 0, false, "nothing due before 9:00"},
		{"skip with tasks ignored", decide(`{"action":"skip","tasks":"x","reason":"later"}`), nil, RouteSkip, 0, false, "later"},
		{"run", decide(`{"action":"run","tasks":"Send the agenda for Monday.","reason":"9:00 weekday"}`), nil, RouteRun, 1, false, "9:00 weekday"},
		{"malformed JSON", decide(`{"action":"run",`), nil, RouteMalformed, 0, false, "malformed: arguments"},
		{"arguments not an object", decide(`"run"`), nil, RouteMalformed, 0, false, "malformed: arguments"},
		{"unknown action", decide(`{"action":"HEARTBEAT_OK","reason":"x"}`), nil, RouteMalformed, 0, false, "unknown action"},
		{"run without tasks", decide(`{"action":"run","tasks":"  ","reason":"x"}`), nil, RouteMalformed, 0, false, "run without tasks"},
		{"free text only", &llm.Response{Content: "HEARTBEAT_OK"}, nil, RouteMalformed, 0, false, "no heartbeat_decision call"},
		{"other tool", &llm.Response{ToolCalls: []llm.ToolCall{{Name: "exec", Arguments: `{}`}}}, nil, RouteMalformed, 0, false, "no heartbeat_decision call"},
		{"nil response", nil, nil, RouteMalformed, 0, false, "empty response"},
		{"provider error", nil, errors.New("503"), RouteError, 0, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prov := &fakeProvider{resp: tc.resp, err: tc.err}
			r := newRig(t, ptr(activeFile), prov, nil)
			out, err := r.svc.TickOnce(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if prov.n() != 1 || !out.ModelCalled {
				t.Fatalf("%d provider calls, want 1", prov.n())
			}
			if out.Route != tc.route || len(r.submitted) != tc.wantSubmits || !strings.Contains(out.Reason, tc.reason) {
				t.Fatalf("outcome %+v, %d submits", out, len(r.submitted))
			}
			if tc.route != RouteRun {
				if out.Action != ActionSkip || len(r.delivered) != 0 {
					t.Fatalf("a skip delivered something: %+v %+v", out, r.delivered)
				}
				return
			}
			req := r.submitted[0]
			if req.Origin != spine.OriginHeartbeat || req.Conversation() != Conversation || req.Channel != "telegram" || req.ChatID != "42" {
				t.Fatalf("submitted %+v", req)
			}
			if !strings.HasSuffix(req.Content, "Send the agenda for Monday.") {
				t.Fatalf("content %q", req.Content)
			}
			if len(r.delivered) != 1 || r.delivered[0].Content != "Done: Send the agenda for Monday." || !r.delivered[0].Proactive {
				t.Fatalf("delivered %+v", r.delivered)
			}
			if !slices.Equal(out.Delivered, []Target{{"telegram", "42"}}) {
				t.Fatalf("outcome delivered %+v", out.Delivered)
			}
		})
	}
}

func TestDecisionRequestShape(t *testing.T) {
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"r"}`)}
	r := newRig(t, ptr(activeFile), prov, nil)
	if _, err := r.svc.TickOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := prov.reqs[0]
	if req.ToolChoice != "required" || len(req.Tools) != 1 || req.Tools[0].Name != DecisionTool || req.Model != "m" {
		t.Fatalf("request %+v", req)
	}
	enum := req.Tools[0].Parameters["properties"].(map[string]any)["action"].(map[string]any)["enum"]
	if !slices.Equal(enum.([]string), []string{"skip", "run"}) {
		t.Fatalf("enum %v", enum)
	}
	user := req.Messages[len(req.Messages)-1].Content
	if !strings.Contains(user, "send me the day's agenda") || !strings.Contains(user, t0.Format(time.RFC3339)) {
		t.Fatalf("prompt %q", user)
	}
}

func TestNoModelSkips(t *testing.T) {
	r := newRig(t, ptr(activeFile), nil, nil)
	out, err := r.svc.TickOnce(context.Background())
	if err != nil || out.Route != RouteNoModel || len(r.submitted) != 0 {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestRunDeliveryTargets(t *testing.T) {
	tests := []struct {
		name      string
		channel   string
		chatID    string
		forward   []string
		lastChat  func(string) string
		wantReqCh string
		want      []Target
	}{
		{"single configured target", "webhook", "w1", nil, nil, "webhook", []Target{{"webhook", "w1"}}},
		{"chat from last session", "telegram", "", nil, func(string) string { return "77" }, "telegram", []Target{{"telegram", "77"}}},
		{"ephemeral expands to forward, broadcast", "cli", "", []string{"telegram:1", "webhook:2"}, nil, "heartbeat", []Target{{"telegram", "1"}, {"webhook", "2"}}},
		{"no target at all", "", "", nil, nil, "heartbeat", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prov := &fakeProvider{resp: decide(`{"action":"run","tasks":"ping","reason":"due"}`)}
			r := newRig(t, ptr(activeFile), prov, func(o *Options) {
				o.Channel, o.ChatID, o.Forward, o.LastChatID = tc.channel, tc.chatID, tc.forward, tc.lastChat
			})
			out, err := r.svc.TickOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.submitted) != 1 || r.submitted[0].Channel != tc.wantReqCh || r.submitted[0].Origin != spine.OriginHeartbeat {
				t.Fatalf("submitted %+v", r.submitted)
			}
			if !slices.Equal(out.Delivered, tc.want) {
				t.Fatalf("delivered to %+v, want %+v", out.Delivered, tc.want)
			}
			var got []Target
			for _, m := range r.delivered {
				if m.Content != "Done: ping" || m.Origin != spine.OriginHeartbeat {
					t.Fatalf("message %+v", m)
				}
				got = append(got, Target{m.Channel, m.ChatID})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("outlets got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolveTargets(t *testing.T) {
	last := func(ch string) string {
		if ch == "telegram" {
			return "99"
		}
		return ""
	}
	tests := []struct {
		name    string
		channel string
		chatID  string
		forward []string
		want    []Target
	}{
		{"real with chat", "telegram", "5", []string{"webhook:1"}, []Target{{"telegram", "5"}}},
		{"real, chat looked up", "telegram", "", nil, []Target{{"telegram", "99"}}},
		{"real, chat unknown", "webhook", "", nil, nil},
		{"empty expands forward", "", "", []string{"telegram", "webhook:h", "cli:x", "telegram:99"}, []Target{{"telegram", "99"}, {"webhook", "h"}}},
		{"tui expands forward", "tui", "", []string{"webhook:h"}, []Target{{"webhook", "h"}}},
		{"cli without forward stays cli", "cli", "", nil, []Target{{"cli", "direct"}}},
		{"empty without forward", "", "", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveTargets(tc.channel, tc.chatID, tc.forward, last); !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLastRunRecorded(t *testing.T) {
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"quiet"}`)}
	r := newRig(t, ptr(activeFile), prov, nil)
	if _, err := r.svc.TickOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	o, ok, err := ReadLastRun(r.svc.opts.LastRunPath)
	if err != nil || !ok || o.Route != RouteSkip || o.Reason != "quiet" || !o.At.Equal(t0) {
		t.Fatalf("%+v %v %v", o, ok, err)
	}
	if _, ok, err := ReadLastRun(filepath.Join(t.TempDir(), "none.json")); ok || err != nil {
		t.Fatalf("missing record: %v %v", ok, err)
	}
}

func TestRunLoopWokenEarly(t *testing.T) {
	clk := clock.NewFake(t0)
	ws := wake.New(wake.Options{Clock: clk, MinInterval: 2 * time.Minute})
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"r"}`), calls: make(chan llm.Request, 4)}
	r := newRig(t, ptr(activeFile), prov, func(o *Options) { o.Clock, o.Waiter = clk, ws })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx) }()

	clk.BlockUntil(1) // asleep on the interval
	clk.Advance(5 * time.Minute)
	ws.RequestWakeNow("cron job standup finished")
	select {
	case req := <-prov.calls:
		if !strings.Contains(req.Messages[1].Content, "Woken early because: cron job standup finished") {
			t.Fatalf("prompt %q", req.Messages[1].Content)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wake did not end the sleep")
	}
	// Back asleep for a full interval from the wake.
	clk.BlockUntil(1)
	clk.Advance(30*time.Minute - time.Second)
	select {
	case <-prov.calls:
		t.Fatal("ticked before the interval")
	default:
	}
	clk.Advance(time.Second)
	select {
	case <-prov.calls:
	case <-time.After(5 * time.Second):
		t.Fatal("interval tick missing")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunLoopWithoutWaiter(t *testing.T) {
	clk := clock.NewFake(t0)
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"r"}`), calls: make(chan llm.Request, 4)}
	r := newRig(t, ptr(activeFile), prov, func(o *Options) { o.Clock = clk })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx) }()
	clk.BlockUntil(1)
	clk.Advance(30 * time.Minute)
	<-prov.calls
	clk.BlockUntil(1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// recordingWaiter reports each wait's length and ends it when told.
type recordingWaiter struct {
	waits   chan time.Duration
	release chan struct{}
}

func (w *recordingWaiter) Wait(ctx context.Context, d time.Duration) (wake.Wake, error) {
	w.waits <- d
	select {
	case <-w.release:
		return wake.Wake{}, nil
	case <-ctx.Done():
		return wake.Wake{}, ctx.Err()
	}
}

// SetInterval on a running loop ends the wait in progress and waits the
// new interval from the change, without a tick in between.
func TestSetIntervalRunning(t *testing.T) {
	w := &recordingWaiter{waits: make(chan time.Duration, 4), release: make(chan struct{})}
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"r"}`), calls: make(chan llm.Request, 4)}
	r := newRig(t, ptr(activeFile), prov, func(o *Options) { o.Waiter = w })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx) }()
	if d := <-w.waits; d != DefaultInterval {
		t.Fatalf("first wait %s, want %s", d, DefaultInterval)
	}
	r.svc.SetInterval(5 * time.Minute)
	if d := <-w.waits; d != 5*time.Minute {
		t.Fatalf("wait after SetInterval %s, want 5m", d)
	}
	select {
	case <-prov.calls:
		t.Fatal("SetInterval ran a heartbeat")
	default:
	}
	if got := r.svc.Interval(); got != 5*time.Minute {
		t.Fatalf("Interval = %s", got)
	}
	w.release <- struct{}{}
	<-prov.calls // the heartbeat at the end of the new interval
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// In the owner's quiet hours a scheduled tick asks the model nothing; a
// wake someone asked for still runs; outside them the tick runs as ever.
func TestQuietHoursMakeNoModelCall(t *testing.T) {
	quiet := true
	prov := &fakeProvider{resp: decide(`{"action":"skip","reason":"not 9:00"}`)}
	r := newRig(t, ptr(activeFile), prov, func(o *Options) { o.Quiet = func() bool { return quiet } })
	ctx := context.Background()
	out, err := r.svc.TickOnce(ctx)
	if err != nil || out.Route != RouteQuiet || out.ModelCalled || prov.n() != 0 {
		t.Fatalf("quiet tick: %+v %v, %d calls", out, err, prov.n())
	}
	if out, err = r.svc.tick(ctx, []string{"raven heartbeat trigger"}); err != nil || !out.ModelCalled || prov.n() != 1 {
		t.Fatalf("an explicit wake in quiet hours: %+v %v, %d calls", out, err, prov.n())
	}
	quiet = false
	if out, err = r.svc.TickOnce(ctx); err != nil || out.Route != RouteSkip || prov.n() != 2 {
		t.Fatalf("after quiet hours: %+v %v, %d calls", out, err, prov.n())
	}
}
