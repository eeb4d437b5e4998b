package approvals

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

type env struct {
	db     *sql.DB
	auth   *auth.Store
	clk    *clock.Fake
	store  *Store
	events chan Request
	op     auth.Principal
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	as, err := auth.NewStore(context.Background(), db, clk)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, auth: as, clk: clk, events: make(chan Request, 16)}
	e.op = e.principal(t, auth.RoleOperator, "operator", false)
	e.store, err = Open(context.Background(), db, Options{
		Clock: clk, Authority: NewAuthority(as),
		Emit: func(_ context.Context, kind, conv string, p any) error {
			r := p.(Request)
			if kind == KindResolved && r.Status == StatusPending {
				t.Errorf("resolved event with pending status")
			}
			e.events <- r
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) principal(t *testing.T, role auth.Role, name string, ro bool) auth.Principal {
	t.Helper()
	tok, err := e.auth.Create(context.Background(), role, name, ro)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.auth.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var ask = Ask{Command: "curl -sS https://example.org", Dir: "/home/o/.raven/workspace", Grants: []string{GrantNetwork}, Conversation: "cli:owner"}

type answer struct {
	r   Request
	err error
}

// askAsync starts Ask and returns the pending request (from its event) and
// the channel its answer arrives on.
func (e *env) askAsync(t *testing.T, ctx context.Context, a Ask) (Request, chan answer) {
	t.Helper()
	ch := make(chan answer, 1)
	go func() {
		r, err := e.store.Ask(ctx, a)
		ch <- answer{r, err}
	}()
	select {
	case r := <-e.events:
		if r.Status != StatusPending || r.ID == "" {
			t.Fatalf("requested event: %+v", r)
		}
		return r, ch
	case a := <-ch:
		t.Fatalf("Ask returned without asking: %+v %v", a.r, a.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no approval.requested event")
	}
	return Request{}, nil
}

func wait(t *testing.T, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
	}
	return answer{}
}

func TestAllowOnceRunsOnceThenAsksAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req, ch := e.askAsync(t, ctx, ask)
	if req.Command != ask.Command || req.Dir != ask.Dir || req.Grants[0] != GrantNetwork || !req.ExpiresAt.Equal(e.clk.Now().Add(DefaultTTL)) {
		t.Fatalf("request %+v", req)
	}
	if got, _ := e.store.List(ctx, ListOptions{}); len(got) != 1 || got[0].ID != req.ID {
		t.Fatalf("list %+v", got)
	}
	d, err := e.store.Decide(ctx, e.op, req.ID, AllowOnce)
	if err != nil || d.Status != StatusAllowed {
		t.Fatalf("decide: %+v %v", d, err)
	}
	if ev := <-e.events; ev.ID != req.ID || ev.Decision != AllowOnce || ev.DecidedBy != "operator" {
		t.Fatalf("resolved event %+v", ev)
	}
	if a := wait(t, ch); a.err != nil || a.r.Status != StatusAllowed || a.r.Remembered {
		t.Fatalf("ask: %+v %v", a.r, a.err)
	}
	// Answerable once.
	if _, err := e.store.Decide(ctx, e.op, req.ID, Deny); !errors.Is(err, ErrResolved) {
		t.Fatalf("second decision: %v", err)
	}
	// The same command again needs a new approval; deny it.
	req2, ch2 := e.askAsync(t, ctx, ask)
	if req2.ID == req.ID {
		t.Fatal("approval reused")
	}
	if _, err := e.store.Decide(ctx, e.op, req2.ID, Deny); err != nil {
		t.Fatal(err)
	}
	<-e.events
	if a := wait(t, ch2); !errors.Is(a.err, ErrDenied) {
		t.Fatalf("denied ask: %v", a.err)
	}
}

func TestAllowAlwaysRemembersExactCommand(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req, ch := e.askAsync(t, ctx, ask)
	if _, err := e.store.Decide(ctx, e.op, req.ID, AllowAlways); err != nil {
		t.Fatal(err)
	}
	<-e.events
	if a := wait(t, ch); a.err != nil {
		t.Fatal(a.err)
	}
	r, err := e.store.Ask(ctx, ask)
	if err != nil || !r.Remembered {
		t.Fatalf("remembered ask: %+v %v", r, err)
	}
	select {
	case ev := <-e.events:
		t.Fatalf("remembered command asked again: %+v", ev)
	default:
	}
	for _, other := range []Ask{
		{Command: ask.Command + " ", Dir: ask.Dir, Grants: ask.Grants},
		{Command: ask.Command, Dir: ask.Dir + "/sub", Grants: ask.Grants},
		{Command: ask.Command, Dir: ask.Dir, Grants: []string{GrantNetwork, PathGrant("/srv")}},
	} {
		cctx, cancel := context.WithCancel(ctx)
		_, ch := e.askAsync(t, cctx, other)
		cancel()
		if a := wait(t, ch); !errors.Is(a.err, context.Canceled) {
			t.Fatalf("%+v: %v", other, a.err)
		}
		<-e.events // canceled
	}
}

func TestExpiry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req, ch := e.askAsync(t, ctx, ask)
	// One jump past the expiry once the waiter sleeps on its poll timer: a
	// loop of small advances could outrun the waiter re-arming it.
	e.clk.BlockUntil(1)
	e.clk.Advance(DefaultTTL + DefaultPoll)
	if a := wait(t, ch); !errors.Is(a.err, ErrExpired) {
		t.Fatalf("ask: %v", a.err)
	}
	if ev := <-e.events; ev.Status != StatusExpired {
		t.Fatalf("event %+v", ev)
	}
	if _, err := e.store.Decide(ctx, e.op, req.ID, AllowOnce); !errors.Is(err, ErrResolved) {
		t.Fatalf("late decision: %v", err)
	}
}

func TestLateDecisionOnUnwatchedRequestExpires(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r, err := e.store.Create(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	<-e.events
	e.clk.Advance(DefaultTTL)
	if got, _ := e.store.List(ctx, ListOptions{All: true}); got[0].Status != StatusExpired {
		t.Fatalf("list shows %s", got[0].Status)
	}
	if _, err := e.store.Decide(ctx, e.op, r.ID, AllowOnce); !errors.Is(err, ErrExpired) {
		t.Fatalf("decide: %v", err)
	}
}

func TestWhoMayDecide(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ro := e.principal(t, auth.RoleDevice, "phone-ro", true)
	captain := e.principal(t, auth.RoleCaptain, "ci", false)
	dev := e.principal(t, auth.RoleDevice, "laptop", false)
	other := e.principal(t, auth.RoleDevice, "tablet", false)
	if _, err := e.auth.TakeControl(ctx, other, "cli:elsewhere", 0); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.Create(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	<-e.events
	for _, p := range []auth.Principal{ro, captain, dev, other, {Name: "forged", Role: auth.RoleOperator}} {
		if _, err := e.store.Decide(ctx, p, r.ID, AllowOnce); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s (%s): %v", p.Name, p.Role, err)
		}
	}
	if _, err := e.auth.TakeControl(ctx, dev, ask.Conversation, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Decide(ctx, dev, r.ID, Deny); err != nil {
		t.Fatalf("controlling device: %v", err)
	}
	// A rotated operator credential loses authority at once.
	r2, _ := e.store.Create(ctx, ask)
	if _, err := e.auth.Rotate(ctx, "operator"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Decide(ctx, e.op, r2.ID, AllowOnce); !errors.Is(err, ErrForbidden) {
		t.Fatalf("rotated operator: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, a := range []Ask{
		{Command: "", Dir: "/w", Grants: []string{GrantNetwork}},
		{Command: "x", Dir: "rel", Grants: []string{GrantNetwork}},
		{Command: "x", Dir: "/w"},
		{Command: "x", Dir: "/w", Grants: []string{"root"}},
		{Command: "x", Dir: "/w", Grants: []string{"path:relative"}},
		{Command: "x", Dir: "/w", Grants: []string{"path:/a/../b"}},
		{Command: "x\x00", Dir: "/w", Grants: []string{GrantNetwork}},
	} {
		if _, err := e.store.Create(ctx, a); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", a, err)
		}
	}
	if _, err := e.store.Decide(ctx, e.op, "nope", AllowOnce); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	r, _ := e.store.Create(ctx, ask)
	if _, err := e.store.Decide(ctx, e.op, r.ID, "yes"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad decision: %v", err)
	}
	if _, err := Open(ctx, e.db, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no authority: %v", err)
	}
}

// A decision taken by another process on the same database (the CLI)
// reaches the waiting exec through polling.
func TestDecisionFromAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raven.db")
	open := func() *Store {
		db, err := sqlitedb.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := Open(context.Background(), db, Options{Authority: OperatorOnly{}, Poll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	gw, cli := open(), open()
	ch := make(chan answer, 1)
	go func() {
		r, err := gw.Ask(context.Background(), ask)
		ch <- answer{r, err}
	}()
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		if l, _ := cli.List(context.Background(), ListOptions{}); len(l) == 1 {
			id = l[0].ID
		}
	}
	if _, err := cli.Decide(context.Background(), auth.Principal{Name: "operator", Role: auth.RoleOperator}, id, AllowOnce); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, ch); a.err != nil {
		t.Fatal(a.err)
	}
}
