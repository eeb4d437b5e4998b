package wake

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

type waitResult struct {
	w   Wake
	err error
}

// startWait runs Wait in a goroutine and returns its result channel.
func startWait(ctx context.Context, s *Scheduler, maxSleep time.Duration) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		w, err := s.Wait(ctx, maxSleep)
		ch <- waitResult{w, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
		return waitResult{}
	}
}

func assertNotReturned(t *testing.T, ch <-chan waitResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Wait returned early: %+v", r)
	default:
	}
}

const interval = 30 * time.Minute

func TestWaitInterval(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, MinInterval: 2 * time.Minute})
	ch := startWait(context.Background(), s, interval)
	clk.BlockUntil(1)
	clk.Advance(interval - time.Second)
	assertNotReturned(t, ch)
	clk.Advance(time.Second)
	r := recv(t, ch)
	if r.err != nil || r.w.Kind != KindInterval || !r.w.At.Equal(t0.Add(interval)) || r.w.Requests != 0 {
		t.Fatalf("got %+v, %v", r.w, r.err)
	}
}

func TestCoalescing(t *testing.T) {
	tests := []struct {
		name        string
		reasons     []string
		wantReasons []string
	}{
		{"one", []string{"cron:a done"}, []string{"cron:a done"}},
		{"duplicates merged", []string{"cron:a done", "subagent 1 done", "cron:a done"}, []string{"cron:a done", "subagent 1 done"}},
		{"empty reason counted", []string{"", "manual"}, []string{"manual"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			s := New(Options{Clock: clk, MinInterval: 2 * time.Minute})
			for _, r := range tc.reasons {
				s.RequestWakeNow(r)
			}
			r := recv(t, startWait(context.Background(), s, interval))
			if r.err != nil || r.w.Kind != KindRequested || !r.w.At.Equal(t0) {
				t.Fatalf("got %+v, %v", r.w, r.err)
			}
			if !slices.Equal(r.w.Reasons, tc.wantReasons) || r.w.Requests != len(tc.reasons) {
				t.Fatalf("reasons %q requests %d, want %q %d", r.w.Reasons, r.w.Requests, tc.wantReasons, len(tc.reasons))
			}
			// Everything was served by that one fire: the next Wait sleeps the full interval.
			ch := startWait(context.Background(), s, interval)
			clk.BlockUntil(1)
			clk.Advance(interval - time.Second)
			assertNotReturned(t, ch)
			clk.Advance(time.Second)
			if r := recv(t, ch); r.w.Kind != KindInterval || r.w.Requests != 0 {
				t.Fatalf("second wait: %+v", r.w)
			}
		})
	}
}

func TestReasonsBounded(t *testing.T) {
	s := New(Options{Clock: clock.NewFake(t0)})
	long := string(make([]byte, 1000))
	for i := range 100 {
		s.RequestWakeNow(long[:i+1] + "x")
	}
	st := s.Status()
	if len(st.Reasons) != maxReasons || st.Requests != 100 {
		t.Fatalf("reasons %d requests %d", len(st.Reasons), st.Requests)
	}
	for _, r := range st.Reasons {
		if len(r) > maxReasonLen {
			t.Fatalf("reason of %d bytes kept", len(r))
		}
	}
}

func TestRateGuardDefersNotDrops(t *testing.T) {
	tests := []struct {
		name      string
		after     time.Duration // request time after the first fire
		wantFire  time.Duration // fire time after the first fire
		guardWait bool
	}{
		{"inside guard deferred to its end", 10 * time.Second, 2 * time.Minute, true},
		{"just inside", 2*time.Minute - time.Second, 2 * time.Minute, true},
		{"after guard fires at once", 3 * time.Minute, 3 * time.Minute, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			s := New(Options{Clock: clk, MinInterval: 2 * time.Minute})
			s.RequestWakeNow("first")
			if r := recv(t, startWait(context.Background(), s, interval)); r.w.Kind != KindRequested {
				t.Fatalf("first fire: %+v", r.w)
			}
			clk.Advance(tc.after)
			s.RequestWakeNow("second")
			ch := startWait(context.Background(), s, interval)
			if tc.guardWait {
				clk.BlockUntil(2) // interval timer + guard timer
				clk.Set(t0.Add(tc.wantFire - time.Millisecond))
				assertNotReturned(t, ch)
				clk.Set(t0.Add(tc.wantFire))
			}
			r := recv(t, ch)
			if r.w.Kind != KindRequested || !r.w.At.Equal(t0.Add(tc.wantFire)) || !slices.Equal(r.w.Reasons, []string{"second"}) {
				t.Fatalf("got %+v, want requested fire at +%v", r.w, tc.wantFire)
			}
		})
	}
}

func TestRequestWhileWaitingInsideGuard(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, MinInterval: 2 * time.Minute})
	s.RequestWakeNow("first")
	recv(t, startWait(context.Background(), s, interval))

	ch := startWait(context.Background(), s, interval)
	clk.BlockUntil(1)
	clk.Advance(30 * time.Second)
	s.RequestWakeNow("a")
	clk.BlockUntil(2) // the waiter saw the request and armed the guard
	s.RequestWakeNow("b")
	clk.Advance(89 * time.Second)
	assertNotReturned(t, ch)
	clk.Advance(time.Second)
	r := recv(t, ch)
	if r.w.Kind != KindRequested || !r.w.At.Equal(t0.Add(2*time.Minute)) || !slices.Equal(r.w.Reasons, []string{"a", "b"}) || r.w.Requests != 2 {
		t.Fatalf("got %+v", r.w)
	}
}

func TestParkedWhileBusyAndRefiredOnTurnDone(t *testing.T) {
	clk := clock.NewFake(t0)
	var busy atomic.Bool
	busy.Store(true)
	s := New(Options{Clock: clk, MinInterval: 2 * time.Minute, Busy: busy.Load})
	s.RequestWakeNow("cron:x done")
	ch := startWait(context.Background(), s, interval)
	clk.BlockUntil(1) // evaluated the request, parked, waiting
	if st := s.Status(); !st.Parked || !st.Pending {
		t.Fatalf("status %+v, want parked", st)
	}
	clk.Advance(5 * time.Minute) // far past the guard: still parked
	assertNotReturned(t, ch)

	busy.Store(false)
	s.TurnDone()
	r := recv(t, ch)
	if r.w.Kind != KindRequested || !r.w.Parked || !r.w.At.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("got %+v", r.w)
	}
}

func TestTurnDoneStillBusyStaysParked(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, MinInterval: time.Minute, Busy: func() bool { return true }})
	s.RequestWakeNow("subagent done")
	ch := startWait(context.Background(), s, interval)
	clk.BlockUntil(1)
	s.TurnDone() // another user turn still runs
	clk.Advance(interval)
	// Had TurnDone fired the wake, the result would be a requested fire at t0.
	r := recv(t, ch)
	if r.w.Kind != KindInterval || !r.w.At.Equal(t0.Add(interval)) || !slices.Equal(r.w.Reasons, []string{"subagent done"}) {
		t.Fatalf("got %+v", r.w)
	}
	if st := s.Status(); st.Pending || st.Parked {
		t.Fatalf("interval fire should serve the parked request: %+v", st)
	}
}

func TestTurnDoneWithoutPendingIsNoop(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk})
	s.TurnDone()
	ch := startWait(context.Background(), s, interval)
	clk.BlockUntil(1)
	clk.Advance(time.Minute)
	assertNotReturned(t, ch)
	clk.Advance(interval)
	if r := recv(t, ch); r.w.Kind != KindInterval {
		t.Fatalf("got %+v", r.w)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	clk := clock.NewFake(t0)
	s := New(Options{Clock: clk, MinInterval: time.Minute, Busy: func() bool { return true }})
	s.RequestWakeNow("x")
	ctx, cancel := context.WithCancel(context.Background())
	ch := startWait(ctx, s, interval)
	clk.BlockUntil(1)
	cancel()
	r := recv(t, ch)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v", r.err)
	}
	if clk.Waiters() != 0 {
		t.Fatalf("%d timers left behind", clk.Waiters())
	}
}

// The last user turn can end between Wait's Busy check and its park. The
// TurnDone of that turn must still wake it, or the wake would sleep until
// the next interval.
func TestTurnDoneBetweenBusyCheckAndParkIsNotLost(t *testing.T) {
	clk := clock.NewFake(t0)
	var s *Scheduler
	var calls atomic.Int32
	s = New(Options{Clock: clk, MinInterval: time.Minute, Busy: func() bool {
		if calls.Add(1) == 1 {
			// Wait has already consumed the request's signal; the turn
			// finishes right after reporting busy, before Wait parks.
			select {
			case <-s.notify:
			default:
			}
			s.TurnDone()
			return true
		}
		return false
	}})
	s.RequestWakeNow("cron done")
	r := recv(t, startWait(context.Background(), s, time.Hour))
	if r.err != nil || r.w.Kind != KindRequested {
		t.Fatalf("wake = %+v, %v; want the requested wake without waiting for the interval", r.w, r.err)
	}
}
