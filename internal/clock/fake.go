package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a manually advanced clock for tests and the virtual-clock demo.
// Timers fire synchronously inside Advance/Set, in deadline order.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the timer set changes
}

// NewFake returns a fake clock reading t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer registers a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1), at: f.now.Add(d)}
	if d <= 0 {
		t.ch <- f.now
		return t
	}
	t.active = true
	f.timers = append(f.timers, t)
	f.notifyLocked()
	return t
}

// Advance moves the clock forward by d, firing due timers in order.
func (f *Fake) Advance(d time.Duration) {
	f.Set(f.Now().Add(d))
}

// Set moves the clock to t (never backwards), firing due timers in order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	for {
		sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
		if len(f.timers) == 0 || f.timers[0].at.After(t) {
			break
		}
		next := f.timers[0]
		f.timers = f.timers[1:]
		next.active = false
		if next.at.After(f.now) {
			f.now = next.at
		}
		select {
		case next.ch <- f.now:
		default:
		}
	}
	f.now = t
	f.notifyLocked()
}

// Waiters reports how many timers are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// BlockUntil blocks until at least n timers are pending. Tests use it to know
// a goroutine has reached its wait before advancing the clock, instead of
// sleeping.
func (f *Fake) BlockUntil(n int) {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return
		}
		ch := f.changed
		f.mu.Unlock()
		<-ch
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) removeLocked(t *fakeTimer) {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notifyLocked()
			return
		}
	}
}

type fakeTimer struct {
	f      *Fake
	ch     chan time.Time
	at     time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	if was {
		t.active = false
		t.f.removeLocked(t)
	}
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	if was {
		t.f.removeLocked(t)
	}
	// Drain a stale fire so Reset behaves like Go 1.23+ timers.
	select {
	case <-t.ch:
	default:
	}
	t.at = t.f.now.Add(d)
	if d <= 0 {
		t.active = false
		t.ch <- t.f.now
		return was
	}
	t.active = true
	t.f.timers = append(t.f.timers, t)
	t.f.notifyLocked()
	return was
}
