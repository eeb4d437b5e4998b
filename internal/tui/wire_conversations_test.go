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
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// TestWireTakeControl runs the TUI, as a control device, against a real
// control-API server serving the real questions store: an answer before
// Take Control is refused with "take control first", /take makes the
// device the controller and the answer goes through, a stale answer is a
// conflict with "read again", and /conversations and /release work. The
// terminal is narrow, so refusals must wrap, not be cut.
func TestWireTakeControl(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC))
	as, err := auth.NewStore(ctx, db, clk)
	if err != nil {
		t.Fatal(err)
	}
	opTok, _ := as.Create(ctx, auth.RoleOperator, "op", false)
	tabTok, _ := as.Create(ctx, auth.RoleDevice, "tablet", false)
	op, _ := as.Verify(ctx, opTok)
	events, err := eventlog.Open(ctx, db, eventlog.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	store, err := questions.OpenStore(ctx, db, questions.StoreOptions{Clock: clk,
		Authority: questions.Authority{Controllers: as, Credentials: as}, Leases: as})
	if err != nil {
		t.Fatal(err)
	}
	srv := controlapi.NewServer(controlapi.Options{Auth: as, Clock: clk})
	srv.RegisterBuiltins(controlapi.Builtins{Leases: as, Events: events, Version: "test"})
	srv.Handle(MethodChatAttach, controlapi.Read, func(context.Context, *controlapi.Call) (any, error) { return map[string]any{}, nil })
	gateway.RegisterQuestions(srv, store)
	sock := filepath.Join(dir, "raven.sock")
	ln, err := controlapi.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; events.Close(); db.Close() })

	ws := t.TempDir()
	if _, err := store.OpenOwner(ctx, op, "tui:main", ws); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Which tracker?", Options: []string{"Linear", "GitHub"}}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var conns []*controlapi.Client
	m := New(Options{Conversation: "tui:main", Clock: clk,
		Dial: func(ctx context.Context) (Client, error) {
			c, err := controlapi.Dial(ctx, sock, tabTok)
			if err == nil {
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
			return c, err
		},
		After: func(time.Duration, tea.Msg) tea.Cmd { return nil },
	})
	const width = 60
	scr := newScreen(m)
	p := &program{scr: scr, clk: clk}
	p.tm = teatest.NewTestModel(t, scr, teatest.WithInitialTermSize(width, 40))
	t.Cleanup(func() {
		_ = p.tm.Quit()
		p.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	enter := func(s string) {
		p.tm.Type(s)
		p.key(tea.KeyEnter)
	}
	p.waitFor(t, "the pending question", contains("Which tracker?", "2. GitHub"))

	enter("/question answer 1")
	p.waitFor(t, "not-controller refusal", containsFlat("take control first: /take"))
	assertWhole(t, scr.last(), m.notice, width)

	enter("/take")
	p.waitFor(t, "take", contains("tablet controls tui:main until"))
	p.waitFor(t, "question re-read after take", contains("2. GitHub"))
	enter("/question answer 2")
	p.waitFor(t, "accepted", contains("answer accepted"))

	// A question the operator answers while the tablet still shows it.
	s, err := store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Line length?", Options: []string{"80", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	enter("/question")
	p.waitFor(t, "second question", contains("Line length?"))
	if _, err := store.Answer(ctx, op, questions.AnswerParams{Conversation: "tui:main", RequestID: s.Request.RequestID,
		Incarnation: s.Incarnation, Revision: s.Revision, OptionID: s.Request.Options[0].OptionID}); err != nil {
		t.Fatal(err)
	}
	enter("/question answer 2")
	p.waitFor(t, "conflict refusal", containsFlat("read again: /question"))
	assertWhole(t, scr.last(), m.notice, width)

	enter("/conversations")
	p.waitFor(t, "conversation list", contains("─ conversations", "▸ tui:main · owner", "controlled by tablet"))
	enter("/release")
	p.waitFor(t, "release", contains("released control of tui:main"))
}

// assertWhole checks that notice is on screen in full (wrapped across
// lines, nothing cut with an ellipsis) and no line is wider than width.
func assertWhole(t *testing.T, screen, notice string, width int) {
	t.Helper()
	if len([]rune(notice)) <= width {
		t.Fatalf("notice %q too short to test wrapping", notice)
	}
	// Long words break hard at the edge, so compare with whitespace removed.
	flat := strings.Join(strings.Fields(screen), "")
	if !strings.Contains(flat, strings.Join(strings.Fields(notice), "")) {
		t.Fatalf("notice not shown whole:\n%q\nscreen:\n%s", notice, screen)
	}
	for _, l := range strings.Split(screen, "\n") {
		if n := len([]rune(l)); n > width {
			t.Fatalf("line of %d runes > %d: %q", n, width, l)
		}
	}
}

// containsFlat is contains on the screen with its line breaks and runs of
// spaces folded, for text that wraps.
func containsFlat(subs ...string) func(string) bool {
	return func(s string) bool { return contains(subs...)(strings.Join(strings.Fields(s), " ")) }
}

// With Options.Workspace the TUI binds its conversation on connect.
func TestOpenOnConnect(t *testing.T) {
	h := newHarness(t)
	h.m.o.Workspace = "/home/owner/proj"
	h.connected()
	h.m.lost("test")
	h.send(ReconnectMsg{})
	h.until("open on reconnect", func() bool {
		c := h.client(1)
		return c != nil && len(c.callsTo(MethodConversationsOpen)) == 1 && len(c.callsTo(MethodInputGet)) == 1
	})
	got := h.client(1).callsTo(MethodConversationsOpen)[0]
	if string(got.Params) != `{"conversation":"tui:main","workspace":"/home/owner/proj"}` {
		t.Fatalf("open params %s", got.Params)
	}
}
