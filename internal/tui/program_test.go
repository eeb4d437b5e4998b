package tui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// These tests run the model inside a real tea.Program (teatest) and read
// what it renders to the terminal, so key decoding, command scheduling
// and the renderer are exercised, not only Update.

// push sends a notification the way the gateway would, unless the
// connection is closed.
func (f *fakeClient) push(method string, v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.notes <- Notification{Method: method, Params: b}
	}
}

// screen wraps the model inside the program and keeps the last frame the
// program asked it to render, so tests read the whole screen rather than
// the renderer's cell diffs (a countdown going 2:00 → 0:45 is written to
// the terminal as just "0:45").
type screen struct {
	*Model
	mu     sync.Mutex
	frame  string
	frames int
	// done counts the RPC replies the model has handled, by kind;
	// doneAt is the frame count when the last one of each was handled.
	done    map[string]int
	doneAt  map[string]int
	changed chan struct{}
}

func newScreen(m *Model) *screen {
	return &screen{Model: m, done: map[string]int{}, doneAt: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (s *screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := s.Model.Update(msg)
	if r, ok := msg.(rpcDoneMsg); ok {
		s.mu.Lock()
		s.done[r.what]++
		s.doneAt[r.what] = s.frames
		s.mu.Unlock()
		s.signal()
	}
	return s, cmd
}

func (s *screen) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// shownAfter reports whether a frame was rendered after the model handled
// the last reply of kind what.
func (s *screen) shownAfter(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.doneAt[what]
	return ok && s.frames > at
}

func (s *screen) handled(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[what]
}

func (s *screen) View() tea.View {
	v := s.Model.View()
	s.mu.Lock()
	s.frame = v.Content
	s.frames++
	s.mu.Unlock()
	s.signal()
	return v
}

func (s *screen) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frame
}

type program struct {
	tm      *teatest.TestModel
	scr     *screen
	clk     *clock.Fake
	mu      sync.Mutex
	clients []*fakeClient
}

// startProgram runs the TUI against fake gateway connections whose
// server side is played by gateway.
func startProgram(t *testing.T, gateway func(c *fakeClient, method string, params json.RawMessage)) *program {
	t.Helper()
	p := &program{clk: clock.NewFake(time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC))}
	m := New(Options{
		Conversation: "tui:main",
		Clock:        p.clk,
		Dial: func(context.Context) (Client, error) {
			c := newFakeClient()
			c.results[api.InputGet.Name()] = questions.Snapshot{Conversation: "tui:main", Status: "none"}
			c.onCall = func(method string, params json.RawMessage) { gateway(c, method, params) }
			p.mu.Lock()
			p.clients = append(p.clients, c)
			p.mu.Unlock()
			return c, nil
		},
		// The countdown is repainted by the test after it moves the fake
		// clock; no real timers.
		After: func(time.Duration, tea.Msg) tea.Cmd { return nil },
	})
	p.scr = newScreen(m)
	p.tm = teatest.NewTestModel(t, p.scr, teatest.WithInitialTermSize(120, 35))
	t.Cleanup(func() {
		_ = p.tm.Quit()
		p.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		// Run closes the connection after the program ends; a bare
		// program quit does not, and its listener would outlive the test.
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.clients {
			_ = c.Close()
		}
	})
	return p
}

// waitFor waits until the rendered screen satisfies cond.
func (p *program) waitFor(t *testing.T, what string, cond func(screen string) bool) {
	t.Helper()
	p.waitUntil(t, what, func() bool { return cond(p.scr.last()) })
}

// waitUntil waits until cond holds, re-checking whenever the model
// handled an RPC reply or rendered a frame.
func (p *program) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-p.scr.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, p.scr.last())
		}
	}
}

// waitForOutput waits until the bytes written to the terminal contain
// want: for text the renderer writes in one piece, such as a new row.
func (p *program) waitForOutput(t *testing.T, want string) {
	t.Helper()
	teatest.WaitFor(t, p.tm.Output(), func(b []byte) bool { return strings.Contains(string(b), want) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func (p *program) client(i int) *fakeClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= len(p.clients) {
		return nil
	}
	return p.clients[i]
}

func (p *program) key(code rune) { p.tm.Send(tea.KeyPressMsg{Code: code}) }

func (p *program) finalModel(t *testing.T) *Model {
	t.Helper()
	p.tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	return p.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*screen).Model
}

func contains(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

func TestProgramChatRoundTrip(t *testing.T) {
	p := startProgram(t, func(c *fakeClient, method string, params json.RawMessage) {
		if method != api.ChatSend.Name() {
			return
		}
		var in api.ChatSendParams
		_ = json.Unmarshal(params, &in)
		c.push(api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "echo-" + strings.ReplaceAll(in.Text, " ", "-"), Reply: true})
		c.push(api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "stretch-break", Origin: "cron", Proactive: true})
		c.push(api.NotifyEvent.Name(), map[string]any{"seq": 7, "kind": "turn.finished", "conversation": "tui:main"})
	})
	p.waitFor(t, "connected", contains("connected"))
	p.tm.Type("hello raven")
	p.key(tea.KeyEnter)
	p.waitFor(t, "reply", contains("echo-hello-raven", "stretch-break", "turn.finished"))

	m := p.finalModel(t)
	want := []line{{"you", "hello raven"}, {"raven", "echo-hello-raven"}, {"raven⚑", "stretch-break"}}
	if len(m.messages) != len(want) {
		t.Fatalf("messages %+v, want %+v", m.messages, want)
	}
	for i := range want {
		if m.messages[i] != want[i] {
			t.Fatalf("message %d = %+v, want %+v", i, m.messages[i], want[i])
		}
	}
	if got := p.client(0).callsTo(api.ChatSend.Name()); len(got) != 1 || string(got[0].Params) != `{"conversation":"tui:main","text":"hello raven"}` {
		t.Fatalf("chat.send %+v", got)
	}
	if !p.client(0).isClosed() {
		t.Fatal("quitting left the connection open")
	}
}

func TestProgramProactiveMarked(t *testing.T) {
	p := startProgram(t, func(*fakeClient, string, json.RawMessage) {})
	p.waitFor(t, "connected", contains("connected"))
	p.client(0).push(api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "water-the-plants", Origin: "cron", Proactive: true})
	// The marker reaches the terminal itself, on the message's row.
	p.waitForOutput(t, ProactiveMarker+"water-the-plants")
	p.waitFor(t, "marked", contains(ProactiveMarker+"water-the-plants"))
}

func TestProgramClarify(t *testing.T) {
	tests := []struct {
		name   string
		keys   []rune
		typed  string
		want   string
		answer string
	}{
		{"recommended with enter", nil, "", `{"conversation":"tui:main","batch":"b1","index":0,"choice":1}`, "[Deploy] production"},
		{"arrow down then a note", []rune{tea.KeyDown}, "after-5pm", `{"conversation":"tui:main","batch":"b1","index":0,"choice":2,"text":"after-5pm"}`, "[Deploy] canary — after-5pm"},
		{"free-form on other", []rune{tea.KeyDown, tea.KeyDown}, "wait", `{"conversation":"tui:main","batch":"b1","index":0,"text":"wait"}`, "[Deploy] wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProgram(t, func(c *fakeClient, method string, _ json.RawMessage) {
				if method == api.ChatSend.Name() {
					c.push(api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{Question: "Which environment?", Header: "Deploy",
						Choices: []string{"staging", "production", "canary"}, Recommended: "production",
						TimeoutS: 120, Index: 0, Total: 1, Batch: "b1"})
				}
			})
			p.waitFor(t, "connected", contains("connected"))
			p.tm.Type("deploy")
			p.key(tea.KeyEnter)
			p.waitFor(t, "prompt", contains("Which environment?", "> 2. production  (recommended)", "2:00 left"))
			p.clk.Advance(75 * time.Second)
			p.tm.Send(TickMsg{})
			p.waitFor(t, "countdown", contains("0:45 left"))
			for _, k := range tt.keys {
				p.key(k)
			}
			p.tm.Type(tt.typed)
			p.key(tea.KeyEnter)
			p.waitFor(t, "answered", contains("answer sent"))

			m := p.finalModel(t)
			got := p.client(0).callsTo(api.ClarifyRespond.Name())
			if len(got) != 1 || string(got[0].Params) != tt.want {
				t.Fatalf("clarify.respond %s, want %s", got, tt.want)
			}
			if m.clarify != nil {
				t.Fatal("prompt still open after the answer was accepted")
			}
			if last := m.messages[len(m.messages)-1]; last != (line{"you", tt.answer}) {
				t.Fatalf("transcript ends with %+v, want the answer %q", last, tt.answer)
			}
			if n := len(p.client(0).callsTo(api.ChatSend.Name())); n != 1 {
				t.Fatalf("%d chat.send calls: the answer leaked into chat", n)
			}
		})
	}
}

func TestProgramReconnects(t *testing.T) {
	p := startProgram(t, func(*fakeClient, string, json.RawMessage) {})
	p.waitFor(t, "connected", contains("● connected"))
	_ = p.client(0).Close() // the gateway restarted
	p.waitFor(t, "disconnected", contains("○ disconnected; retrying in 250ms"))
	p.tm.Send(ReconnectMsg{}) // the backoff timer, fired by hand
	p.waitFor(t, "reconnected", contains("● connected"))
	p.waitUntil(t, "attached again", func() bool { return p.scr.handled("attach") == 2 })
	p.tm.Type("still-there")
	p.key(tea.KeyEnter)
	p.waitUntil(t, "sent", func() bool { return p.scr.handled("send") == 1 })
	m := p.finalModel(t)
	c := p.client(1)
	if got := c.callsTo(api.ChatSend.Name()); len(got) != 1 || len(c.callsTo(api.ChatAttach.Name())) != 1 {
		t.Fatalf("second connection not used: sent %s", got)
	}
	if len(p.client(0).callsTo(api.ChatSend.Name())) != 0 {
		t.Fatal("sent on the dead connection")
	}
	if m.connected {
		t.Fatal("final model still connected after quit")
	}
}
