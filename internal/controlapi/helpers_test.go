package controlapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)

type env struct {
	t      testing.TB
	srv    *Server
	store  *auth.Store
	events *eventlog.Log
	clk    *clock.Fake
	sock   string
	tokens map[string]string
	closed chan string
}

// newEnv starts a server on a unix socket with one credential per kind of
// principal: op (operator), phone (control device), tablet (read-only
// device), ci (captain).
func newEnv(t testing.TB, mod func(*Options)) *env {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "rvn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	// database/sql keeps only 2 idle connections by default; with many
	// concurrent clients each call would then open a fresh SQLite
	// connection. The gateway sizes its pool the same way.
	db.SetMaxIdleConns(16)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	store, err := auth.NewStore(ctx, db, clk)
	if err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.Open(ctx, db, eventlog.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store, events: events, clk: clk, sock: filepath.Join(dir, "raven.sock"),
		tokens: map[string]string{}, closed: make(chan string, 1024)}
	for _, c := range []struct {
		role auth.Role
		name string
		ro   bool
	}{{auth.RoleOperator, "op", false}, {auth.RoleDevice, "phone", false}, {auth.RoleDevice, "tablet", true}, {auth.RoleCaptain, "ci", false}} {
		tok, err := store.Create(ctx, c.role, c.name, c.ro)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[c.name] = tok
	}
	opts := Options{Auth: store, Clock: clk, OnClose: func(r string) { e.closed <- r }}
	if mod != nil {
		mod(&opts)
	}
	e.srv = NewServer(opts)
	e.srv.RegisterBuiltins(Builtins{Leases: store, Events: events, Version: "test"})
	e.srv.handle("test.operator_only", Operator, func(ctx context.Context, call *Call) (any, error) { return "ok", nil })
	ln, err := ListenUnix(e.sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		events.Close()
		db.Close()
	})
	return e
}

func (e *env) dial(name string) *Client {
	e.t.Helper()
	c, err := Dial(context.Background(), e.sock, e.tokens[name])
	if err != nil {
		e.t.Fatalf("dial as %s: %v", name, err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a hand-driven connection for frame-level tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func (e *env) raw(name string) *rawConn {
	e.t.Helper()
	nc, err := net.Dial("unix", e.sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { nc.Close() })
	rc := &rawConn{t: e.t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
	if name != "" {
		rc.send(`{"jsonrpc":"2.0","id":0,"method":"auth.hello","params":{"token":"` + e.tokens[name] + `"}}`)
		if m := rc.recv(); m.Error != nil {
			e.t.Fatalf("hello: %+v", m.Error)
		}
	}
	return rc
}

func (rc *rawConn) send(frame string) {
	rc.t.Helper()
	if _, err := rc.nc.Write([]byte(frame + "\n")); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) recv() inbound {
	rc.t.Helper()
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		rc.t.Fatalf("recv: %v", err)
	}
	var m inbound
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("recv %q: %v", line, err)
	}
	return m
}
