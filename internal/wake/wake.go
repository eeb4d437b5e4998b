// Package wake ends the heartbeat's sleep early when something happened (a
// cron job or subagent finished, an operator asked), and carries trigger files.
package wake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// Kind says why a Wait returned.
type Kind string

const (
	// KindInterval is the regular heartbeat tick: maxSleep elapsed.
	KindInterval Kind = "interval"
	// KindRequested is an early fire caused by RequestWakeNow.
	KindRequested Kind = "requested"
)

// maxReasons bounds the reasons kept for one fire; a flood of producers must
// not grow memory or the heartbeat prompt without bound.
const maxReasons = 16

// maxReasonLen bounds one reason.
const maxReasonLen = 200

// Wake is one fire handed to the heartbeat loop.
type Wake struct {
	Kind Kind
	At   time.Time
	// Reasons are the distinct reasons of the requests served by this fire,
	// oldest first (at most 16). An interval fire also serves any request
	// still pending when it happens.
	Reasons []string
	// Requests counts the RequestWakeNow calls coalesced into this fire.
	Requests int
	// Parked reports that the fire was held back while user turns ran.
	Parked bool
}

// Options configures a Scheduler.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// MinInterval is the least spacing between two fires (the rate guard).
	// A request inside it is deferred to its end, not dropped.
	MinInterval time.Duration
	// Busy reports whether the agent is busy with user turns (the spine's
	// Scheduler.UserBusy); nil means never busy. While busy, a due wake is
	// parked until TurnDone.
	Busy func() bool
}

// Scheduler coalesces wake requests into early heartbeat fires. Producers
// call RequestWakeNow from any goroutine; one consumer calls Wait.
type Scheduler struct {
	clk  clock.Clock
	log  *slog.Logger
	min  time.Duration
	busy func() bool

	// notify has room for one signal: producers never block, and one
	// signal is enough for the consumer to re-read the state.
	notify chan struct{}

	mu       sync.Mutex
	pending  bool
	reasons  []string
	requests int
	parked   bool
	lastFire time.Time
}

// New returns a Scheduler. A nil Clock is the wall clock.
func New(opts Options) *Scheduler {
	c := opts.Clock
	if c == nil {
		c = clock.Real()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	busy := opts.Busy
	if busy == nil {
		busy = func() bool { return false }
	}
	return &Scheduler{clk: c, log: log, min: max(opts.MinInterval, 0), busy: busy, notify: make(chan struct{}, 1)}
}

// RequestWakeNow asks for an early heartbeat. Requests made before the next
// fire coalesce into it; the reason is kept (deduplicated) for the heartbeat
// prompt and the logs. It never blocks.
func (s *Scheduler) RequestWakeNow(reason string) {
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	s.mu.Lock()
	s.pending = true
	s.requests++
	s.addReasonLocked(reason)
	n := s.requests
	s.mu.Unlock()
	s.log.Debug("wake requested", "reason", reason, "coalesced", n)
	s.signal()
}

// TurnDone is the turn-complete callback (wire it to the spine's OnTurnDone):
// a wake parked while the agent was busy is re-evaluated and fires if the
// agent is now idle. It never blocks.
func (s *Scheduler) TurnDone() {
	s.mu.Lock()
	// Signal whenever a wake is pending, not only once parked: Wait checks
	// Busy outside s.mu, so the last turn may end between that check and
	// the park, and a parked-only signal would be lost until the interval.
	pending := s.pending
	s.mu.Unlock()
	if pending {
		s.signal()
	}
}

// Status is a snapshot for status displays.
type Status struct {
	Pending  bool
	Parked   bool
	Requests int
	Reasons  []string
	LastFire time.Time
	// NextAllowed is the earliest time the rate guard lets a wake fire.
	NextAllowed time.Time
}

// Status returns the scheduler's current state.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Pending: s.pending, Parked: s.parked, Requests: s.requests,
		Reasons: append([]string(nil), s.reasons...), LastFire: s.lastFire}
	if !s.lastFire.IsZero() {
		st.NextAllowed = s.lastFire.Add(s.min)
	}
	return st
}

// Wait blocks until the next fire: an early wake when one was requested (no
// sooner than the rate guard allows, and not while the agent is busy with
// user turns), or an interval fire once maxSleep has passed. It returns
// ctx.Err() when ctx ends. Only one goroutine may Wait at a time.
func (s *Scheduler) Wait(ctx context.Context, maxSleep time.Duration) (Wake, error) {
	deadline := s.clk.Now().Add(maxSleep)
	// The interval timer lives for the whole Wait; the guard timer only
	// while a request is held back by the rate guard.
	interval := s.clk.NewTimer(maxSleep)
	defer interval.Stop()
	var guard clock.Timer
	var guardAt time.Time
	stopGuard := func() {
		if guard != nil {
			guard.Stop()
			guard = nil
		}
	}
	defer stopGuard()

	for {
		now := s.clk.Now()
		if !now.Before(deadline) {
			return s.fire(KindInterval, now), nil
		}
		s.mu.Lock()
		pending, last := s.pending, s.lastFire
		s.mu.Unlock()
		allowed := last.Add(s.min)
		if pending {
			if last.IsZero() || !now.Before(allowed) {
				stopGuard()
				// Busy is called outside s.mu: it takes the spine's lock.
				if !s.busy() {
					return s.fire(KindRequested, now), nil
				}
				s.park()
			} else if guard == nil || !guardAt.Equal(allowed) {
				stopGuard()
				guardAt = allowed
				guard = s.clk.NewTimer(allowed.Sub(now))
			}
		}
		var guardC <-chan time.Time
		if guard != nil {
			guardC = guard.C()
		}
		select {
		case <-ctx.Done():
			return Wake{}, ctx.Err()
		case <-interval.C():
			// Return at the deadline even if the fake clock jumped past it.
			return s.fire(KindInterval, s.clk.Now()), nil
		case <-guardC:
			guard = nil
		case <-s.notify:
		}
	}
}

func (s *Scheduler) park() {
	s.mu.Lock()
	first := !s.parked
	s.parked = true
	s.mu.Unlock()
	if first {
		s.log.Info("wake parked: agent busy with user turns")
	}
}

// fire takes the pending requests into a Wake and starts the rate guard.
func (s *Scheduler) fire(kind Kind, now time.Time) Wake {
	s.mu.Lock()
	w := Wake{Kind: kind, At: now, Reasons: s.reasons, Requests: s.requests, Parked: s.parked}
	s.pending, s.reasons, s.requests, s.parked = false, nil, 0, false
	s.lastFire = now
	s.mu.Unlock()
	// Drop a stale signal so the next Wait does not spin once for nothing.
	select {
	case <-s.notify:
	default:
	}
	if kind == KindRequested {
		s.log.Info("wake fired", "reasons", w.Reasons, "requests", w.Requests, "parked", w.Parked)
	}
	return w
}

func (s *Scheduler) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Scheduler) addReasonLocked(reason string) {
	if reason == "" {
		return
	}
	for _, r := range s.reasons {
		if r == reason {
			return
		}
	}
	if len(s.reasons) < maxReasons {
		s.reasons = append(s.reasons, reason)
	}
}
