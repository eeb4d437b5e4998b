package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// wireGateway is the gateway's control-API surface the TUI depends on,
// built from the real parts: the control-API server on a unix socket with
// token auth and strict decoding, the event log, and the ask_user broker
// with its clarify.respond handler. Only the agent is missing: the test
// asks the question itself.
type wireGateway struct {
	sock, token string
	clk         *clock.Fake
	events      *eventlog.Log
	broker      *questions.Broker

	mu       sync.Mutex
	attached map[string][]controlapi.Notifier
	sent     []string
}

func (g *wireGateway) notify(conv, method string, params any) {
	g.mu.Lock()
	ns := append([]controlapi.Notifier(nil), g.attached[conv]...)
	g.mu.Unlock()
	for _, n := range ns {
		_ = n.Notify(method, params)
	}
}

func startWireGateway(t *testing.T) *wireGateway {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "rvt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	g := &wireGateway{sock: filepath.Join(dir, "raven.sock"), clk: clock.NewFake(time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)),
		attached: map[string][]controlapi.Notifier{}}
	store, err := auth.NewStore(ctx, db, g.clk)
	if err != nil {
		t.Fatal(err)
	}
	if g.token, err = store.Create(ctx, auth.RoleOperator, "op", false); err != nil {
		t.Fatal(err)
	}
	if g.events, err = eventlog.Open(ctx, db, eventlog.Options{Clock: g.clk}); err != nil {
		t.Fatal(err)
	}
	srv := controlapi.NewServer(controlapi.Options{Auth: store, Clock: g.clk})
	srv.RegisterBuiltins(controlapi.Builtins{Leases: store, Events: g.events, Version: "test"})
	g.broker = questions.NewBroker(questions.BrokerOptions{Clock: g.clk,
		Notify: func(conv string, req questions.ClarifyRequest) { g.notify(conv, api.NotifyClarifyRequest.Name(), req) }})
	clarify := &questions.ClarifyHandler{Broker: g.broker}
	controlapi.Handle(srv, api.ClarifyRespond, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.ClarifyRespondParams) (questions.ClarifyRespondResult, error) {
			return clarify.Respond(ctx, c.Principal, in)
		})
	controlapi.Handle(srv, api.ChatAttach, controlapi.Read,
		func(ctx context.Context, c *controlapi.Call, in api.ChatAttachParams) (api.ChatAttachResult, error) {
			g.mu.Lock()
			g.attached[in.Conversation] = append(g.attached[in.Conversation], c.Notifier())
			g.mu.Unlock()
			return api.ChatAttachResult{Attached: in.Conversation}, nil
		})
	controlapi.Handle(srv, api.ChatSend, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in api.ChatSendParams) (api.ChatSendResult, error) {
			g.mu.Lock()
			g.sent = append(g.sent, in.Text)
			g.mu.Unlock()
			// The tui outlet's notification, as the gateway sends a reply.
			g.notify(in.Conversation, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: in.Conversation, Content: "got: " + in.Text, Origin: "user", Reply: true})
			return api.ChatSendResult{Outcome: "appended"}, nil
		})
	controlapi.Handle(srv, api.InputGet, controlapi.Read,
		func(context.Context, *controlapi.Call, questions.GetParams) (questions.Snapshot, error) {
			return questions.Snapshot{}, controlapi.NotFound(`questions: not_found: no conversation "tui:main"`)
		})
	ln, err := controlapi.ListenUnix(g.sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		g.events.Close()
		db.Close()
	})
	return g
}

// TestWireAgainstRealControlAPI runs the TUI program against the real
// control-API server: auth, strict params, notifications, the event feed
// and an ask_user answer that travels back to the broker.
func TestWireAgainstRealControlAPI(t *testing.T) {
	g := startWireGateway(t)
	var mu sync.Mutex
	var conns []*controlapi.Client
	m := New(Options{
		Conversation: "tui:main",
		Clock:        g.clk,
		Dial: func(ctx context.Context) (Client, error) {
			c, err := controlapi.Dial(ctx, g.sock, g.token)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			return c, nil
		},
		After: func(time.Duration, tea.Msg) tea.Cmd { return nil },
	})
	scr := newScreen(m)
	p := &program{scr: scr, clk: g.clk}
	p.tm = teatest.NewTestModel(t, scr, teatest.WithInitialTermSize(120, 35))
	t.Cleanup(func() {
		_ = p.tm.Quit()
		p.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})

	p.waitFor(t, "connected", contains("● connected"))
	// Replies and events reach only an attached, subscribed connection;
	// both calls go out together on connect.
	p.waitUntil(t, "attach, subscribe, input_get", func() bool {
		return scr.handled("attach") == 1 && scr.handled("subscribe") == 1 && scr.handled("question") == 1
	})
	p.waitUntil(t, "a frame after input_get", func() bool { return scr.shownAfter("question") })
	if strings.Contains(scr.last(), "not_found") {
		t.Fatalf("a conversation without owner questions raised a notice:\n%s", scr.last())
	}

	p.tm.Type("hello")
	p.key(tea.KeyEnter)
	p.waitFor(t, "reply", contains("you › hello", "raven › got: hello"))

	if _, err := g.events.Append(context.Background(), "turn.finished", "tui:main", map[string]any{"origin": "user", "error": "boom"}); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "event", contains("turn.finished tui:main error: boom"))

	type result struct {
		answers []questions.Answer
		err     error
	}
	asked := make(chan result, 1)
	go func() {
		a, err := g.broker.Ask(context.Background(), "tui:main", []questions.Question{{
			Question: "Which environment?", Header: "Deploy",
			Choices: []string{"staging", "production", "canary"}, Recommended: "staging",
		}}, 2*time.Minute)
		asked <- result{a, err}
	}()
	p.waitFor(t, "prompt", contains("[Deploy] · 2:00 left", "> 1. staging  (recommended)"))
	p.key(tea.KeyDown)
	p.tm.Type("after-5pm")
	p.key(tea.KeyEnter)
	r := <-asked
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.answers) != 1 || r.answers[0].Choice != "production" || r.answers[0].Text != "after-5pm" {
		t.Fatalf("broker got %+v", r.answers)
	}
	p.waitFor(t, "answer in transcript", contains("you › [Deploy] production — after-5pm", "answer sent"))
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sent) != 1 {
		t.Fatalf("chat.send texts %q: the answer leaked into chat", g.sent)
	}
}
