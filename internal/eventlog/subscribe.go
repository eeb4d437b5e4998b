package eventlog

import (
	"context"
	"fmt"
	"sync"
)

// backfillPage is how many stored events a subscription reads per query
// while catching up.
const backfillPage = 256

// Subscription is a live feed of events after some sequence: first the
// stored backlog, then events as they are appended, in sequence order. Its
// channel closes when the context ends, the log closes, or the reader falls
// a whole queue behind (Err then reports ErrSlowSubscriber).
type Subscription struct {
	l    *Log
	live chan Event // fed by Append under l.mu; closed when dropped
	out  chan Event
	stop context.CancelFunc
	done chan struct{}

	mu  sync.Mutex
	err error
	// OldestRetained is the oldest sequence retained when the subscription
	// started; events between afterSeq and it were pruned.
	OldestRetained int64
}

// Subscribe starts a subscription delivering every event with seq >
// afterSeq. The subscription's goroutine ends when ctx ends or Close is
// called.
func (l *Log) Subscribe(ctx context.Context, afterSeq int64) (*Subscription, error) {
	if afterSeq < 0 {
		return nil, fmt.Errorf("%w: subscribe after %d", ErrInvalid, afterSeq)
	}
	oldest, err := l.OldestRetained(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Subscription{
		l: l, live: make(chan Event, l.opts.SubscriberQueue), out: make(chan Event),
		stop: cancel, done: make(chan struct{}), OldestRetained: oldest,
	}
	// Register and read the high-water mark under the append lock: every
	// event above it reaches s.live, every event at or below it is in the DB.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		cancel()
		return nil, ErrClosed
	}
	hwm, err := l.LastSeq(ctx)
	if err != nil {
		l.mu.Unlock()
		cancel()
		return nil, err
	}
	l.subs[s] = struct{}{}
	l.mu.Unlock()
	go s.run(ctx, afterSeq, hwm)
	return s, nil
}

// Events is the feed. It is closed when the subscription ends.
func (s *Subscription) Events() <-chan Event { return s.out }

// Err reports why the feed closed (nil while it is open).
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits for its goroutine.
func (s *Subscription) Close() {
	s.stop()
	<-s.done
}

func (s *Subscription) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *Subscription) run(ctx context.Context, cursor, hwm int64) {
	defer close(s.done)
	defer close(s.out)
	defer s.l.unsubscribe(s)
	for cursor < hwm {
		evs, _, err := s.l.Tail(ctx, cursor, backfillPage)
		if err != nil {
			s.setErr(err)
			return
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > hwm {
				break
			}
			if !s.send(ctx, ev) {
				return
			}
			cursor = ev.Seq
		}
	}
	for {
		select {
		case ev, ok := <-s.live:
			if !ok {
				return // dropped: err already set
			}
			if ev.Seq <= cursor {
				continue
			}
			if !s.send(ctx, ev) {
				return
			}
			cursor = ev.Seq
		case <-ctx.Done():
			s.setErr(ctx.Err())
			return
		}
	}
}

func (s *Subscription) send(ctx context.Context, ev Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-ctx.Done():
		s.setErr(ctx.Err())
		return false
	}
}

func (l *Log) unsubscribe(s *Subscription) {
	l.mu.Lock()
	delete(l.subs, s)
	l.mu.Unlock()
}

// fanoutLocked hands ev to every subscriber without ever blocking: a full
// queue means the reader is a whole queue behind, and it is dropped.
func (l *Log) fanoutLocked(ev Event) {
	for s := range l.subs {
		select {
		case s.live <- ev:
		default:
			l.log.Warn("eventlog: dropping slow subscriber", "seq", ev.Seq, "queue", cap(s.live))
			l.dropLocked(s, ErrSlowSubscriber)
		}
	}
}

func (l *Log) dropLocked(s *Subscription, reason error) {
	if _, ok := l.subs[s]; !ok {
		return
	}
	delete(l.subs, s)
	s.setErr(reason)
	close(s.live)
}
