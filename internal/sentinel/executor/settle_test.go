package executor

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

// An inject is charged once, when queued, and reported as delivered only
// once the reply it rode on was delivered; an undelivered reply puts it
// back for the next one without a second charge.
func TestInjectorChargesOnceReportsDelivered(t *testing.T) {
	tests := []struct {
		name         string
		delivered    []bool // one reply per element
		wantReported int
		wantPending  int
		wantRides    int // replies that carried the inject
	}{
		{"delivered", []bool{true, true}, 1, 0, 1},
		{"delivery failed: requeued", []bool{false}, 0, 1, 1},
		{"failed then delivered", []bool{false, true, true}, 1, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			g := &fakeGate{}
			var reported []Delivery
			in, err := NewInjector(InjectorOptions{Store: openStore(t, filepath.Join(t.TempDir(), "state.json"), clk), Gate: g, Clock: clk,
				OnDelivered: func(_ context.Context, d Delivery) { reported = append(reported, d) }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if r := in.Queue(ctx, Nudge{Message: "btw: dentist at 3", Session: "tg:1"}); !r.Queued {
				t.Fatal(r)
			}
			rides := 0
			for _, ok := range tc.delivered {
				if got := in.Modify("tg:1", "reply"); got != "reply" {
					rides++
				}
				in.SettleTurn(spine.TurnRequest{Origin: spine.OriginUser, Channel: "tg", ChatID: "1"}, ok)
			}
			p, _ := in.Pending(ctx)
			if g.firedN() != 1 || len(reported) != tc.wantReported || len(p["tg:1"]) != tc.wantPending || rides != tc.wantRides {
				t.Fatalf("fired %d reported %d pending %d rides %d", g.firedN(), len(reported), len(p["tg:1"]), rides)
			}
		})
	}
}

func TestInjectorSettleIgnoresSystemTurnsAndOtherSessions(t *testing.T) {
	clk := clock.NewFake(t0)
	g := &fakeGate{}
	reported := 0
	in, _ := NewInjector(InjectorOptions{Store: openStore(t, filepath.Join(t.TempDir(), "state.json"), clk), Gate: g, Clock: clk,
		OnDelivered: func(context.Context, Delivery) { reported++ }})
	in.Queue(context.Background(), Nudge{Message: "m", Session: "tg:1"})
	in.Modify("tg:1", "r")
	in.SettleTurn(spine.TurnRequest{Origin: spine.OriginCron, Channel: "tg", ChatID: "1"}, true)
	in.Settle("tg:2", true)
	if reported != 0 {
		t.Fatal("a system turn or another session settled the inject")
	}
	in.Settle("tg:1", true)
	if reported != 1 || g.firedN() != 1 {
		t.Fatalf("reported %d fired %d", reported, g.firedN())
	}
}

// A process that took an inject and died before settling does not lose
// it: after the in-flight bound a peer requeues and delivers it.
func TestInjectorInflightSurvivesCrash(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "state.json")
	g := &fakeGate{}
	crashed, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Gate: g, Clock: clk, InflightTimeout: 10 * time.Minute})
	crashed.Queue(context.Background(), Nudge{Message: "m", Session: "tg:1"})
	if got := crashed.Modify("tg:1", "r"); got != "r\n\nm" {
		t.Fatal(got)
	}
	// The restarted process: a new injector on a new store instance.
	peer, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Gate: g, Clock: clk, InflightTimeout: 10 * time.Minute})
	if got := peer.Modify("tg:1", "r"); got != "r" {
		t.Fatalf("in-flight inject taken twice within the bound: %q", got)
	}
	clk.Advance(11 * time.Minute)
	if got := peer.Modify("tg:1", "r"); got != "r\n\nm" {
		t.Fatalf("unsettled inject not requeued after the bound: %q", got)
	}
	peer.Settle("tg:1", true)
	if g.firedN() != 1 {
		t.Fatalf("fired %d", g.firedN())
	}
	if got := peer.Modify("tg:1", "r"); got != "r" {
		t.Fatalf("settled inject delivered again: %q", got)
	}
}

// A turn that outlives the in-flight bound: a peer requeues its inject,
// then the turn delivers. The inject is charged once and not carried again.
func TestInjectorLongTurnDeliveredAfterRequeue(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "state.json")
	g := &fakeGate{}
	slow, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Gate: g, Clock: clk, InflightTimeout: time.Minute})
	peer, _ := NewInjector(InjectorOptions{Store: openStore(t, path, clk), Gate: g, Clock: clk, InflightTimeout: time.Minute})
	slow.Queue(context.Background(), Nudge{Message: "m", Session: "tg:1"})
	slow.Modify("tg:1", "r")
	clk.Advance(2 * time.Minute)
	peer.Queue(context.Background(), Nudge{Message: "other", Session: "tg:9"}) // prunes: requeues "m"
	slow.Settle("tg:1", true)
	if got := peer.Modify("tg:1", "r"); got != "r" || g.firedN() != 2 { // "m" and "other", each once
		t.Fatalf("got %q fired %d", got, g.firedN())
	}
}

// Poll asks LastActivity (a SQLite query in production) without holding the
// shared state lock, so a slow session store cannot stall the policy and
// the injector of every process.
func TestDeferPollQueriesActivityOutsideLock(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "state.json")
	var mu sync.Mutex
	var heldDuring []bool
	m, _ := NewDeferManager(DeferOptions{Store: openStore(t, path, clk), Clock: clk, IdleThreshold: time.Minute, MaxWait: time.Hour,
		Dispatch: func(context.Context, Nudge) Result { return Result{Delivered: true} },
		LastActivity: func(context.Context, string) (time.Time, bool) {
			l := statefile.NewLock(path + ".lock")
			ok, err := l.TryAcquire()
			if err != nil {
				t.Error(err)
			}
			if ok {
				l.Release()
			}
			mu.Lock()
			heldDuring = append(heldDuring, !ok)
			mu.Unlock()
			return t0.Add(-time.Hour), true
		}})
	ctx := context.Background()
	m.Register(ctx, Nudge{Message: "x", Session: "tg:1"}, "c")
	m.Register(ctx, Nudge{Message: "y", Session: "tg:2"}, "c")
	if r := m.Poll(ctx); len(r) != 2 {
		t.Fatalf("%+v", r)
	}
	if len(heldDuring) != 2 || heldDuring[0] || heldDuring[1] {
		t.Fatalf("LastActivity ran under the state lock: %v", heldDuring)
	}
}

// Shutdown cancels the poll's context mid-dispatch: the claimed entry is
// still put back.
func TestDeferRequeueSurvivesCancel(t *testing.T) {
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	m, _ := NewDeferManager(DeferOptions{Store: openStore(t, filepath.Join(t.TempDir(), "s.json"), clk), Clock: clk, IdleThreshold: time.Minute, MaxWait: time.Hour,
		Dispatch: func(context.Context, Nudge) Result { cancel(); return Result{Error: "shutting down"} }})
	m.Register(context.Background(), Nudge{Message: "x"}, "c")
	clk.Advance(2 * time.Minute)
	m.Poll(ctx)
	if p, _ := m.Pending(context.Background()); len(p) != 1 {
		t.Fatalf("claimed entry lost on cancel: %+v", p)
	}
}

// BenchmarkModifySettle is the per-reply cost of the injector on a reply
// with nothing queued (the common case) and with one inject riding it.
func BenchmarkModifySettle(b *testing.B) {
	for _, withInject := range []bool{false, true} {
		name := "empty"
		if withInject {
			name = "one_inject"
		}
		b.Run(name, func(b *testing.B) {
			st, err := statefile.Open(filepath.Join(b.TempDir(), "state.json"), statefile.Options{})
			if err != nil {
				b.Fatal(err)
			}
			in, _ := NewInjector(InjectorOptions{Store: st, Gate: &fakeGate{}})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if withInject {
					in.Queue(ctx, Nudge{Message: "m", Session: "tg:1"})
				}
				in.Modify("tg:1", "reply")
				in.Settle("tg:1", true)
			}
		})
	}
}
