package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// TestWireApprovals runs the TUI as the operator against a real control-API
// server with the gateway's approvals methods over the real store: a
// waiting exec's request appears as a prompt from the event feed,
// /approvals lists it, /approve runs it once, /deny refuses the next, and a
// second answer is refused.
func TestWireApprovals(t *testing.T) {
	dir, err := os.MkdirTemp("", "rva")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	as, err := auth.NewStore(ctx, db, clk)
	if err != nil {
		t.Fatal(err)
	}
	opTok, _ := as.Create(ctx, auth.RoleOperator, "op", false)
	events, err := eventlog.Open(ctx, db, eventlog.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"appr-1", "appr-2"}
	store, err := approvals.Open(ctx, db, approvals.Options{Clock: clk, Authority: approvals.NewAuthority(as),
		NewID: func() string { id := ids[0]; ids = ids[1:]; return id },
		Emit: func(ctx context.Context, kind, conv string, p any) error {
			_, err := events.Append(ctx, kind, conv, p)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := controlapi.NewServer(controlapi.Options{Auth: as, Clock: clk})
	srv.RegisterBuiltins(controlapi.Builtins{Leases: as, Events: events, Version: "test"})
	controlapi.Handle(srv, api.ChatAttach, controlapi.Read,
		func(_ context.Context, _ *controlapi.Call, in api.ChatAttachParams) (api.ChatAttachResult, error) {
			return api.ChatAttachResult{Attached: in.Conversation}, nil
		})
	controlapi.Handle(srv, api.InputGet, controlapi.Read,
		func(_ context.Context, _ *controlapi.Call, in questions.GetParams) (questions.Snapshot, error) {
			return questions.Snapshot{Conversation: in.Conversation, Status: "idle"}, nil
		})
	gateway.RegisterApprovals(srv, store)
	sock := filepath.Join(dir, "raven.sock")
	ln, err := controlapi.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()

	// ask is the exec tool waiting on the owner.
	ask := func(cmd string) chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := store.Ask(ctx, approvals.Ask{Command: cmd, Dir: "/work/ws", Grants: []string{approvals.GrantNetwork}, Conversation: "tui:main"})
			ch <- err
		}()
		return ch
	}
	first := ask("curl https://example.com")
	// The first request waits before the TUI starts: the prompt comes
	// from the pending list read on connect; the second comes through the
	// event feed.
	waitPending(t, store, 1)
	var conn *controlapi.Client
	m := New(Options{Conversation: "tui:main", Clock: clk,
		Dial: func(ctx context.Context) (Client, error) {
			c, err := controlapi.Dial(ctx, sock, opTok)
			conn = c
			return c, err
		},
		After: func(time.Duration, tea.Msg) tea.Cmd { return nil },
	})
	scr := newScreen(m)
	p := &program{scr: scr, clk: clk}
	p.tm = teatest.NewTestModel(t, scr, teatest.WithInitialTermSize(100, 40))
	t.Cleanup(func() {
		_ = p.tm.Quit()
		p.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
		if conn != nil {
			conn.Close()
		}
		cancel()
		<-done
		events.Close()
		db.Close()
	})
	enter := func(s string) {
		p.tm.Type(s)
		p.key(tea.KeyEnter)
	}

	p.waitFor(t, "the approval prompt", containsFlat("approval needed: appr-1", "curl https://example.com", "/approve appr-1 [always]"))
	enter("/approvals")
	p.waitFor(t, "the approvals panel", contains("─ approvals", "appr-1  needs network"))
	enter("/approve appr-1")
	p.waitFor(t, "allowed", contains("appr-1: allow-once"))
	if err := <-first; err != nil {
		t.Fatalf("approved exec: %v", err)
	}
	enter("/deny appr-1")
	p.waitFor(t, "second answer refused", containsFlat("approval-decide refused", "already resolved"))

	second := ask("curl https://example.org")
	p.waitFor(t, "the second prompt", containsFlat("approval needed: appr-2"))
	enter("/deny appr-2")
	p.waitFor(t, "denied", contains("appr-2: deny"))
	if err := <-second; !errors.Is(err, approvals.ErrDenied) {
		t.Fatalf("denied exec: %v, want ErrDenied", err)
	}
	enter("/approve")
	p.waitFor(t, "usage", containsFlat(approvalsUsage))
}

func waitPending(t *testing.T, st *approvals.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs, err := st.List(context.Background(), approvals.ListOptions{})
		if err == nil && len(rs) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d pending approvals, have %d (%v)", n, len(rs), err)
		}
		time.Sleep(time.Millisecond) // polling a goroutine's store write
	}
}
