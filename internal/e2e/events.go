package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
)

// Events is a control-API event subscription that records every event the
// gateway streams, for tests to wait on.
type Events struct {
	e *Env
	c *controlapi.Client

	mu      sync.Mutex
	seen    []eventlog.Event
	changed chan struct{}
}

// Subscribe opens a connection and subscribes to the event log from its
// start (every retained event, then live ones). The cleanup closes it.
func (e *Env) Subscribe() *Events {
	e.T.Helper()
	ev := &Events{e: e, c: e.Dial(), changed: make(chan struct{})}
	go ev.read()
	zero := int64(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := controlapi.Invoke(ctx, ev.c, api.EventsSubscribe, api.SubscribeParams{AfterSeq: &zero}); err != nil {
		e.T.Fatalf("e2e: events.subscribe: %v", err)
	}
	return ev
}

func (ev *Events) read() {
	for {
		select {
		case <-ev.c.Done():
			return
		case n := <-ev.c.Notifications():
			e, ok, err := controlapi.DecodeNotification(n, api.NotifyEvent)
			if !ok || err != nil {
				continue
			}
			ev.mu.Lock()
			ev.seen = append(ev.seen, e)
			close(ev.changed)
			ev.changed = make(chan struct{})
			ev.mu.Unlock()
		}
	}
}

// Seen returns the events received so far, in order.
func (ev *Events) Seen() []eventlog.Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]eventlog.Event(nil), ev.seen...)
}

// WaitFor returns the first event (received so far or later) that match
// accepts, failing the test if none arrives within.
func (ev *Events) WaitFor(within time.Duration, what string, match func(eventlog.Event) bool) eventlog.Event {
	ev.e.T.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for i := 0; ; {
		ev.mu.Lock()
		seen, changed := ev.seen, ev.changed
		ev.mu.Unlock()
		for ; i < len(seen); i++ {
			if match(seen[i]) {
				return seen[i]
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			ev.e.T.Fatalf("e2e: no event %s within %s; saw:\n%s", what, within, ev)
		case <-ev.c.Done():
			ev.e.T.Fatalf("e2e: event stream closed before %s: %v; saw:\n%s", what, ev.c.Err(), ev)
		}
	}
}

// Kind matches events of kind.
func Kind(kind string) func(eventlog.Event) bool {
	return func(e eventlog.Event) bool { return e.Kind == kind }
}

func (ev *Events) String() string {
	var sb strings.Builder
	for _, e := range ev.Seen() {
		fmt.Fprintf(&sb, "  #%d %s %s %.200s\n", e.Seq, e.Kind, e.Conversation, e.Payload)
	}
	return sb.String()
}
