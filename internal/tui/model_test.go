package tui

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

func TestMain(m *testing.M) {
	// teatest parks one goroutine per test model on a SIGINT channel that
	// it never closes; that is the library's, not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest/v2.NewTestModel.func2"))
}

type call struct {
	Method string
	Params json.RawMessage
}

func (c call) String() string { return c.Method + " " + string(c.Params) }

// fakeClient is an in-memory control-API connection.
type fakeClient struct {
	mu      sync.Mutex
	calls   []call
	results map[string]any
	errs    map[string]error
	notes   chan Notification
	closed  bool
	// onCall, when set, plays the gateway's side of a call (e.g. the
	// reply notification a chat.send leads to); it runs without mu held.
	onCall func(method string, params json.RawMessage)
}

func newFakeClient() *fakeClient {
	return &fakeClient{results: map[string]any{}, errs: map[string]error{}, notes: make(chan Notification, 16)}
}

func (f *fakeClient) Call(_ context.Context, method string, params, result any) error {
	p, _ := json.Marshal(params)
	f.mu.Lock()
	f.calls = append(f.calls, call{method, p})
	err, res, onCall := f.errs[method], f.results[method], f.onCall
	f.mu.Unlock()
	if onCall != nil {
		onCall(method, p)
	}
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	return json.Unmarshal(b, result)
}

func (f *fakeClient) set(method string, result any, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if result != nil {
		f.results[method] = result
	}
	f.errs[method] = err
}

func (f *fakeClient) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fakeClient) Notifications() <-chan Notification { return f.notes }

func (f *fakeClient) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.notes)
	}
	return nil
}

func (f *fakeClient) notify(t *testing.T, method string, params any) {
	t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	f.notes <- Notification{Method: method, Params: p}
}

func (f *fakeClient) callsTo(method string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// harness runs the model like a program: commands run on goroutines and
// their messages are fed back through Update on the test goroutine.
type harness struct {
	t       *testing.T
	m       *Model
	clk     *clock.Fake
	msgs    chan tea.Msg
	wg      sync.WaitGroup
	mu      sync.Mutex
	clients []*fakeClient
	dialErr error
	after   []time.Duration
	quit    bool
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clk: clock.NewFake(time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)), msgs: make(chan tea.Msg, 64)}
	h.m = New(Options{
		Conversation: "tui:main",
		Clock:        h.clk,
		Dial: func(context.Context) (Client, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.dialErr != nil {
				return nil, h.dialErr
			}
			c := newFakeClient()
			c.results[api.InputGet.Name()] = questions.Snapshot{Conversation: "tui:main", Status: "none"}
			h.clients = append(h.clients, c)
			return c, nil
		},
		After: func(d time.Duration, msg tea.Msg) tea.Cmd {
			h.after = append(h.after, d)
			return nil
		},
	})
	t.Cleanup(func() {
		h.mu.Lock()
		for _, c := range h.clients {
			_ = c.Close()
		}
		h.mu.Unlock()
		// Drain until every command goroutine has returned.
		done := make(chan struct{})
		go func() { h.wg.Wait(); close(done) }()
		for {
			select {
			case <-h.msgs:
			case <-done:
				return
			}
		}
	})
	h.run(h.m.Init())
	return h
}

func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				h.run(c)
			}
			return
		}
		if msg != nil {
			h.msgs <- msg
		}
	}()
}

func (h *harness) send(msg tea.Msg) {
	if _, ok := msg.(tea.QuitMsg); ok {
		h.quit = true
		return
	}
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// until feeds messages to the model until cond holds.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case msg := <-h.msgs:
			h.send(msg)
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s; view:\n%s", what, h.m.View().Content)
		}
	}
}

func (h *harness) client(i int) *fakeClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.clients) {
		return nil
	}
	return h.clients[i]
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func (h *harness) press(code rune) { h.send(tea.KeyPressMsg{Code: code}) }

func (h *harness) view() string { return h.m.View().Content }

func (h *harness) connected() {
	h.t.Helper()
	h.until("connected", func() bool {
		c := h.client(0)
		return h.m.connected && c != nil && h.m.question != nil &&
			len(c.callsTo(api.ChatAttach.Name())) == 1 && len(c.callsTo(api.EventsSubscribe.Name())) == 1
	})
}

func TestChatSendAndMessages(t *testing.T) {
	h := newHarness(t)
	h.connected()
	c := h.client(0)
	if got := c.callsTo(api.ChatAttach.Name()); len(got) != 1 || string(got[0].Params) != `{"conversation":"tui:main"}` {
		t.Fatalf("attach calls %+v", got)
	}
	if len(c.callsTo(api.EventsSubscribe.Name())) != 1 {
		t.Fatal("events.subscribe not called")
	}
	h.typeText("hello raven")
	h.press(tea.KeyEnter)
	h.until(api.ChatSend.Name(), func() bool { return len(c.callsTo(api.ChatSend.Name())) == 1 })
	if p := string(c.callsTo(api.ChatSend.Name())[0].Params); p != `{"conversation":"tui:main","text":"hello raven"}` {
		t.Fatalf("chat.send params %s", p)
	}
	c.notify(t, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "hi, owner", Reply: true})
	c.notify(t, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "time to stretch", Proactive: true})
	c.notify(t, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "telegram:1", Content: "not for this view"})
	c.notify(t, api.NotifyEvent.Name(), map[string]any{"seq": 41, "kind": "turn.finished", "conversation": "tui:main"})
	h.until("messages shown", func() bool { return strings.Contains(h.view(), "#41 turn.finished") })
	v := h.view()
	for _, want := range []string{"you › hello raven", "raven › hi, owner", ProactiveMarker + "time to stretch", "● connected"} {
		if !strings.Contains(v, want) {
			t.Fatalf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "not for this view") || strings.Contains(v, "raven › time to stretch") {
		t.Fatalf("view shows a foreign or unmarked message:\n%s", v)
	}
}

func TestClarifyPrompt(t *testing.T) {
	tests := []struct {
		name  string
		keys  func(h *harness)
		typed string
		want  string
		shown string
	}{
		{"recommended preselected", func(h *harness) {}, "", `{"conversation":"tui:main","batch":"b1","index":0,"choice":1}`,
			"you › [Deploy] prod"},
		{"arrow selects with a note", func(h *harness) { h.press(tea.KeyUp) }, "only after 5pm", `{"conversation":"tui:main","batch":"b1","index":0,"choice":0,"text":"only after 5pm"}`,
			"you › [Deploy] staging — only after 5pm"},
		{"free-form answer", func(h *harness) { h.press(tea.KeyDown) }, "neither, wait", `{"conversation":"tui:main","batch":"b1","index":0,"text":"neither, wait"}`,
			"you › [Deploy] neither, wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.connected()
			c := h.client(0)
			c.notify(t, api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{
				Question: "Deploy where?", Choices: []string{"staging", "prod"}, Header: "Deploy",
				Recommended: "prod", TimeoutS: 600, Index: 0, Total: 2, Batch: "b1",
			})
			h.until("prompt", func() bool { return h.m.clarify != nil })
			v := h.view()
			for _, want := range []string{"[Deploy] 1/2", "10:00 left", "2. prod  (recommended)", "> 2. prod", "✎ other"} {
				if !strings.Contains(v, want) {
					t.Fatalf("prompt lacks %q:\n%s", want, v)
				}
			}
			h.clk.Advance(75 * time.Second)
			h.send(TickMsg{})
			if !strings.Contains(h.view(), "8:45 left") {
				t.Fatalf("budget not counting down:\n%s", h.view())
			}
			tt.keys(h)
			h.typeText(tt.typed)
			h.press(tea.KeyEnter)
			// A second Enter before the gateway replied must not answer twice.
			h.press(tea.KeyEnter)
			if !strings.Contains(h.view(), "sending…") {
				t.Fatalf("in-flight answer not shown:\n%s", h.view())
			}
			h.until("respond", func() bool { return h.m.clarify == nil })
			got := c.callsTo(api.ClarifyRespond.Name())
			if len(got) != 1 || string(got[0].Params) != tt.want {
				t.Fatalf("clarify.respond %+v, want %s", got, tt.want)
			}
			if !strings.Contains(h.view(), tt.shown) {
				t.Fatalf("answer not in the transcript as %q:\n%s", tt.shown, h.view())
			}
			if len(c.callsTo(api.ChatSend.Name())) != 0 {
				t.Fatal("an answer leaked into chat.send")
			}
		})
	}
}

func TestClarifyRefused(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		keptOpen bool
	}{
		{"transient error keeps the prompt", &controlapi.RPCError{Code: controlapi.CodeUnavailable, Message: "busy"}, true},
		{"plain transport error keeps the prompt", errors.New("broken pipe"), true},
		{"not found drops it", &controlapi.RPCError{Code: controlapi.CodeNotFound, Message: "no question pending on tui:main"}, false},
		{"conflict drops it", &controlapi.RPCError{Code: controlapi.CodeConflict, Message: "expired"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.connected()
			c := h.client(0)
			c.set(api.ClarifyRespond.Name(), nil, tt.err)
			c.notify(t, api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{Question: "Name?", TimeoutS: 30, Total: 1, Batch: "b"})
			h.until("prompt", func() bool { return h.m.clarify != nil })
			h.press(tea.KeyEnter)
			if !strings.Contains(h.view(), "type an answer") || len(c.callsTo(api.ClarifyRespond.Name())) != 0 {
				t.Fatalf("empty free-form answer was not refused locally:\n%s", h.view())
			}
			h.typeText("Bob")
			h.press(tea.KeyEnter)
			h.until("refusal", func() bool { return strings.Contains(h.view(), "answer refused") })
			if (h.m.clarify != nil) != tt.keptOpen {
				t.Fatalf("prompt open=%v, want %v:\n%s", h.m.clarify != nil, tt.keptOpen, h.view())
			}
			// The next Enter goes to the prompt if it is still open (a
			// retry), otherwise it is an ordinary chat message.
			h.typeText("again")
			h.press(tea.KeyEnter)
			if tt.keptOpen {
				h.until("retry", func() bool { return len(c.callsTo(api.ClarifyRespond.Name())) == 2 })
				return
			}
			h.until("chat", func() bool { return len(c.callsTo(api.ChatSend.Name())) == 1 })
			if len(c.callsTo(api.ClarifyRespond.Name())) != 1 {
				t.Fatal("a gone question was answered again")
			}
		})
	}
}

func TestClarifyTimeUp(t *testing.T) {
	tests := []struct {
		name   string
		typed  string
		notice string
		chat   int
	}{
		{"empty enter closes it", "", "did not answer", 0},
		{"typed text becomes a message", "late", "sent as a new message", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.connected()
			c := h.client(0)
			c.notify(t, api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{Question: "Name?", Choices: []string{"a"}, TimeoutS: 30, Total: 1, Batch: "b"})
			h.until("prompt", func() bool { return h.m.clarify != nil })
			h.clk.Advance(31 * time.Second)
			h.send(TickMsg{})
			if !strings.Contains(h.view(), "time is up") {
				t.Fatalf("no timeout shown:\n%s", h.view())
			}
			h.typeText(tt.typed)
			h.press(tea.KeyEnter)
			if h.m.clarify != nil || !strings.Contains(h.view(), tt.notice) {
				t.Fatalf("late enter:\n%s", h.view())
			}
			h.until("chat", func() bool { return len(c.callsTo(api.ChatSend.Name())) == tt.chat })
			if len(c.callsTo(api.ClarifyRespond.Name())) != 0 {
				t.Fatal("an expired question was answered")
			}
		})
	}
}

func TestGatewayShutdownClosesPrompt(t *testing.T) {
	tests := []struct {
		reason string
		open   bool
	}{
		{"shutdown", false},
		{"slow_consumer", true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			h := newHarness(t)
			h.connected()
			c := h.client(0)
			c.notify(t, api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{Question: "Name?", TimeoutS: 30, Total: 1, Batch: "b"})
			h.until("prompt", func() bool { return h.m.clarify != nil })
			c.notify(t, api.NotifyClosing.Name(), map[string]string{"reason": tt.reason})
			h.until("closing", func() bool { return strings.Contains(h.view(), "closed the connection: "+tt.reason) })
			if (h.m.clarify != nil) != tt.open {
				t.Fatalf("prompt open=%v, want %v:\n%s", h.m.clarify != nil, tt.open, h.view())
			}
		})
	}
}

func TestEventFeedResumes(t *testing.T) {
	h := newHarness(t)
	h.connected()
	first := h.client(0)
	first.set(api.EventsSubscribe.Name(), controlapi.SubscribeResult{AfterSeq: 41, OldestRetained: 50, Missed: true}, nil)
	if p := string(first.callsTo(api.EventsSubscribe.Name())[0].Params); p != `{}` {
		t.Fatalf("first subscribe %s, want the live feed", p)
	}
	first.notify(t, api.NotifyEvent.Name(), map[string]any{"seq": 41, "kind": "turn.started", "conversation": "tui:main"})
	// A slow reader's feed is dropped by the gateway: pick it up again.
	first.notify(t, api.NotifyEventsDropped.Name(), controlapi.DroppedParams{Reason: "slow_subscriber", LastSeq: 45})
	h.until("resubscribe", func() bool { return len(first.callsTo(api.EventsSubscribe.Name())) == 2 })
	if p := string(first.callsTo(api.EventsSubscribe.Name())[1].Params); p != `{"after_seq":45}` {
		t.Fatalf("resubscribe %s", p)
	}
	h.until("missed", func() bool { return strings.Contains(h.view(), "events before #50 were pruned") })
	// After a gateway restart the feed resumes after the last event seen.
	_ = first.Close()
	h.until("disconnect", func() bool { return !h.m.connected })
	h.send(ReconnectMsg{})
	h.until("reconnect", func() bool {
		c := h.client(1)
		return c != nil && len(c.callsTo(api.EventsSubscribe.Name())) == 1
	})
	if p := string(h.client(1).callsTo(api.EventsSubscribe.Name())[0].Params); p != `{"after_seq":45}` {
		t.Fatalf("subscribe after reconnect %s", p)
	}
}

func TestQuestionNotFound(t *testing.T) {
	h := newHarness(t)
	h.connected()
	c := h.client(0)
	c.set(api.InputGet.Name(), nil, &controlapi.RPCError{Code: controlapi.CodeNotFound, Message: `no conversation "tui:main"`})
	// Fetched on its own (a lifecycle event): a conversation without
	// owner questions is normal and stays quiet.
	c.notify(t, api.NotifyEvent.Name(), map[string]any{"seq": 3, "kind": "input_resolved", "conversation": "tui:main"})
	h.until("refetch", func() bool { return len(c.callsTo(api.InputGet.Name())) == 2 && h.m.question == nil })
	if h.m.notice != "" {
		t.Fatalf("automatic fetch raised a notice: %q", h.m.notice)
	}
	h.typeText("/question")
	h.press(tea.KeyEnter)
	h.until("notice", func() bool { return strings.Contains(h.view(), "no owner question for tui:main") })
}

func TestQuestionCommands(t *testing.T) {
	snap := questions.Snapshot{
		Conversation: "tui:main", Incarnation: "inc-1", Revision: 7, Status: "pending",
		Request: &questions.RequestView{RequestID: "req-1", Incarnation: "inc-1", Kind: "choice", Question: "Which tracker?",
			Options: []questions.Option{{OptionID: "opt-a", Label: "Linear"}, {OptionID: "opt-b", Label: "GitHub"}}, AllowText: true},
	}
	tests := []struct {
		name    string
		cmd     string
		method  string
		want    string
		callErr error
		notice  string
	}{
		{"answer option", "/question answer 2", api.InputAnswer.Name(),
			`{"conversation":"tui:main","request_id":"req-1","incarnation":"inc-1","revision":7,"option_id":"opt-b"}`, nil, "answer accepted"},
		{"answer text", "/question text use both", api.InputAnswer.Name(),
			`{"conversation":"tui:main","request_id":"req-1","incarnation":"inc-1","revision":7,"text":"use both"}`, nil, "answer accepted"},
		{"cancel", "/question cancel", api.InputCancel.Name(),
			`{"conversation":"tui:main","request_id":"req-1","incarnation":"inc-1","revision":7}`, nil, "question cancelled"},
		{"conflict forces a re-read", "/question answer 1", api.InputAnswer.Name(),
			`{"conversation":"tui:main","request_id":"req-1","incarnation":"inc-1","revision":7,"option_id":"opt-a"}`, errors.New("conflict: revision moved"), "run /question to read it again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.connected()
			c := h.client(0)
			c.set(api.InputGet.Name(), snap, nil)
			c.set(api.InputAnswer.Name(), questions.Receipt{RequestID: "req-1", Status: "accepted", RunID: "run-9"}, nil)
			c.set(tt.method, nil, tt.callErr)
			h.typeText("/question")
			h.press(tea.KeyEnter)
			h.until("snapshot", func() bool { return strings.Contains(h.view(), "Which tracker?") })
			if !strings.Contains(h.view(), "2. GitHub") || !strings.Contains(h.view(), "rev 7") {
				t.Fatalf("question view:\n%s", h.view())
			}
			h.typeText(tt.cmd)
			h.press(tea.KeyEnter)
			h.until("result", func() bool { return strings.Contains(h.view(), tt.notice) })
			got := c.callsTo(tt.method)
			if len(got) != 1 || string(got[0].Params) != tt.want {
				t.Fatalf("%s calls %+v, want %s", tt.method, got, tt.want)
			}
			// The displayed binding is spent: a second answer needs a re-read.
			h.typeText("/question answer 1")
			h.press(tea.KeyEnter)
			if !strings.Contains(h.view(), "run /question first") {
				t.Fatalf("stale binding reused:\n%s", h.view())
			}
			if len(c.callsTo(api.ChatSend.Name())) != 0 {
				t.Fatal("/question text leaked into chat")
			}
		})
	}
}

func TestQuestionCommandNeedsDisplayedQuestion(t *testing.T) {
	h := newHarness(t)
	h.connected()
	h.typeText("/question answer 1")
	h.press(tea.KeyEnter)
	if !strings.Contains(h.view(), "run /question first") || len(h.client(0).callsTo(api.InputAnswer.Name())) != 0 {
		t.Fatalf("answered without a displayed question:\n%s", h.view())
	}
}

func TestQuestionRefetchedOnLifecycleEvent(t *testing.T) {
	h := newHarness(t)
	h.connected()
	c := h.client(0)
	c.notify(t, api.NotifyEvent.Name(), map[string]any{"seq": 3, "kind": "input_requested", "conversation": "tui:main"})
	h.until("refetch", func() bool { return len(c.callsTo(api.InputGet.Name())) == 2 })
}

func TestReconnectWithBackoff(t *testing.T) {
	h := newHarness(t)
	h.connected()
	first := h.client(0)
	first.notify(t, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "before restart"})
	h.until("message", func() bool { return strings.Contains(h.view(), "before restart") })

	h.mu.Lock()
	h.dialErr = errors.New("connection refused")
	h.mu.Unlock()
	_ = first.Close() // the gateway went away
	h.until("disconnect", func() bool { return !h.m.connected && len(h.after) == 1 })
	if !strings.Contains(h.view(), "○ disconnected") {
		t.Fatalf("view:\n%s", h.view())
	}
	// Each failed attempt doubles the wait.
	h.send(ReconnectMsg{})
	h.until("second failure", func() bool { return len(h.after) == 2 })
	h.send(ReconnectMsg{})
	h.until("third failure", func() bool { return len(h.after) == 3 })
	if h.after[0] != 250*time.Millisecond || h.after[1] != 500*time.Millisecond || h.after[2] != time.Second {
		t.Fatalf("backoff %v", h.after)
	}
	h.mu.Lock()
	h.dialErr = nil
	h.mu.Unlock()
	h.send(ReconnectMsg{})
	h.until("reconnected", func() bool {
		c := h.client(1)
		return h.m.connected && c != nil && len(c.callsTo(api.InputGet.Name())) == 1
	})
	if !strings.Contains(h.view(), "before restart") {
		t.Fatal("history lost across reconnect")
	}
	if h.m.backoff != minBackoff {
		t.Fatalf("backoff not reset: %v", h.m.backoff)
	}
	// The new connection works.
	h.typeText("still there?")
	h.press(tea.KeyEnter)
	h.until("send", func() bool { return len(h.client(1).callsTo(api.ChatSend.Name())) == 1 })
}

func TestQuit(t *testing.T) {
	h := newHarness(t)
	h.connected()
	h.send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	if !h.quit && !h.m.quitting {
		t.Fatal("ctrl+c did not quit")
	}
	if !h.client(0).isClosed() {
		t.Fatal("connection left open")
	}
}

func TestSummarizeEvent(t *testing.T) {
	at := time.Date(2026, 10, 4, 9, 15, 30, 0, time.UTC)
	hms := at.Local().Format("15:04:05")
	tests := []struct {
		name   string
		method string
		params string
		want   string
		seq    int64
	}{
		{"failed turn", api.NotifyEvent.Name(),
			`{"seq":8,"kind":"turn.finished","conversation":"tui:main","time":"` + at.Format(time.RFC3339Nano) + `","payload":{"origin":"user","error":"context canceled"}}`,
			hms + " #8 turn.finished tui:main error: context canceled", 8},
		{"proactive delivery", api.NotifyEvent.Name(),
			`{"seq":9,"kind":"message.delivered","conversation":"tui:main","payload":{"origin":"cron","proactive":true}}`,
			"#9 message.delivered tui:main origin=cron ⚑", 9},
		{"other notification keeps its method, no seq", "gateway.notice", `{"seq":3}`, "gateway.notice", 0},
		{"not an object", api.NotifyEvent.Name(), `[1]`, api.NotifyEvent.Name(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, seq := summarizeEvent(Notification{Method: tt.method, Params: json.RawMessage(tt.params)})
			if got != tt.want || seq != tt.seq {
				t.Fatalf("summary %q seq %d, want %q %d", got, seq, tt.want, tt.seq)
			}
		})
	}
}
