package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/spine"
)

// KindEventsDropped marks, in the event log, that the writer's queue
// overflowed and Count events were lost before this point.
const KindEventsDropped = "events.dropped"

const (
	// eventQueueSize bounds the events waiting for the writer. The callbacks
	// that emit (Hub.Watch, turn observers, the Sentinel's OnTick) must not
	// block, so beyond this the newest events are dropped and counted.
	eventQueueSize = 4096
	// eventBatchMax caps one transaction of the writer.
	eventBatchMax = 256
	// eventFlushTimeout bounds the final flush at shutdown, which runs even
	// when the grace period is already spent.
	eventFlushTimeout = 5 * time.Second
)

// eventWriter puts a bounded queue and one writer goroutine in front of the
// event log, so an SQLite insert never runs inside a must-not-block
// callback. Queued events are written in order, several per transaction.
type eventWriter struct {
	write   func(ctx context.Context, recs []eventlog.Record) error
	log     *slog.Logger
	queue   chan eventlog.Record
	dropped atomic.Int64
	stopped atomic.Bool
	stop    chan struct{}
	done    chan struct{}
	flushes chan chan struct{}
	once    sync.Once
}

// newEventWriter starts the writer; write stores a batch in order. Close
// flushes and stops it.
func newEventWriter(write func(ctx context.Context, recs []eventlog.Record) error, queueSize int, log *slog.Logger) *eventWriter {
	w := &eventWriter{write: write, log: log, queue: make(chan eventlog.Record, queueSize),
		stop: make(chan struct{}), done: make(chan struct{}), flushes: make(chan chan struct{})}
	go w.run()
	return w
}

// logWriter writes to l: one Append for a lone event, AppendBatch for more.
func logWriter(l *eventlog.Log) func(context.Context, []eventlog.Record) error {
	return func(ctx context.Context, recs []eventlog.Record) error {
		if len(recs) == 1 {
			_, err := l.Append(ctx, recs[0].Kind, recs[0].Conversation, recs[0].Payload)
			return err
		}
		_, err := l.AppendBatch(ctx, recs)
		return err
	}
}

// Enqueue queues an event without blocking; a full queue drops it and
// counts the loss for the events.dropped marker.
func (w *eventWriter) Enqueue(kind, conversation string, payload any) {
	if w.stopped.Load() {
		return // after the final flush: nothing would write it
	}
	select {
	case w.queue <- eventlog.Record{Kind: kind, Conversation: conversation, Payload: payload}:
	default:
		if w.dropped.Add(1) == 1 {
			w.log.Warn("event queue full: dropping events until the writer catches up", "queue", cap(w.queue))
		}
	}
}

func (w *eventWriter) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batch := make([]eventlog.Record, 0, eventBatchMax)
	for {
		select {
		case r := <-w.queue:
			batch = w.flush(ctx, append(batch[:0], r))
		case ack := <-w.flushes:
			for len(w.queue) > 0 {
				batch = w.flush(ctx, batch[:0])
			}
			close(ack)
		case <-w.stop:
			// Final flush: everything queued before Close.
			for len(w.queue) > 0 {
				batch = w.flush(ctx, batch[:0])
			}
			w.markDropped(ctx)
			return
		}
	}
}

// flush tops batch up from the queue, writes it, and reports a drained
// overflow. It returns batch for reuse.
func (w *eventWriter) flush(ctx context.Context, batch []eventlog.Record) []eventlog.Record {
fill:
	for len(batch) < eventBatchMax {
		select {
		case r := <-w.queue:
			batch = append(batch, r)
		default:
			break fill
		}
	}
	if len(batch) == 0 {
		return batch
	}
	if err := w.write(ctx, batch); err != nil && len(batch) > 1 {
		// One unencodable payload must not cost its neighbours.
		for _, r := range batch {
			w.writeOne(ctx, r)
		}
	} else if err != nil {
		w.log.Warn("event not recorded", "kind", batch[0].Kind, "err", err)
	}
	if len(w.queue) == 0 {
		w.markDropped(ctx)
	}
	clear(batch)
	return batch
}

func (w *eventWriter) writeOne(ctx context.Context, r eventlog.Record) {
	if err := w.write(ctx, []eventlog.Record{r}); err != nil {
		w.log.Warn("event not recorded", "kind", r.Kind, "err", err)
	}
}

// markDropped records, once the queue has drained, how many events an
// overflow cost, so a reader of the log knows it has a gap there.
func (w *eventWriter) markDropped(ctx context.Context) {
	n := w.dropped.Swap(0)
	if n == 0 {
		return
	}
	w.log.Warn("event queue overflowed; events dropped", "count", n)
	w.writeOne(ctx, eventlog.Record{Kind: KindEventsDropped, Payload: map[string]any{"count": n}})
}

// Flush returns once every event queued before it was written.
func (w *eventWriter) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case w.flushes <- ack:
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close flushes the queued events and stops the writer. Call it after the
// emitters have stopped (services ended, turns drained), before the
// database closes.
func (w *eventWriter) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.stop) })
	select {
	case <-w.done:
	case <-ctx.Done():
		// The grace period is spent, but losing the shutdown's own events
		// would hide why it ran long: give the flush its own bound.
		t := time.NewTimer(eventFlushTimeout)
		defer t.Stop()
		select {
		case <-w.done:
		case <-t.C:
			w.log.Warn("event flush timed out at shutdown", "queued", len(w.queue))
		}
	}
	w.stopped.Store(true)
	return nil
}

// buildEvents opens the event log and puts the writer in front of it;
// every notable runtime event (turns, deliveries, ticks, denials, cron
// fires, questions, outbox) goes through emit.
func (r *Runtime) buildEvents(ctx context.Context, _ Options) error {
	gc := r.cfg.Gateway
	var err error
	if r.events, err = eventlog.Open(ctx, r.db, eventlog.Options{Clock: r.clk, Logger: r.log.With("component", "events"),
		MaxCount: gc.EventsMaxCount, MaxAge: gc.EventsMaxAge.D()}); err != nil {
		return err
	}
	r.AddCloser(func(context.Context) error { r.events.Close(); return nil })
	r.writer = newEventWriter(logWriter(r.events), eventQueueSize, r.log.With("component", "events"))
	// Registered after the event log's closer, so it runs before it: the
	// writer flushes once turns have drained and the DB is still open.
	r.AddCloser(r.writer.Close)
	emit := r.writer.Enqueue
	r.observeTurns(func(req spine.TurnRequest) {
		emit("turn.started", req.Conversation(), map[string]any{"origin": req.Origin, "channel": req.Channel})
	}, func(req spine.TurnRequest, res spine.Result) {
		p := map[string]any{"origin": req.Origin, "delivered": res.Delivered, "injected": res.Injected}
		if res.Err != nil {
			p["error"] = res.Err.Error()
		}
		emit("turn.finished", req.Conversation(), p)
	})
	r.hub.Watch(func(m spine.Message, err error) {
		if m.Reply && err == nil {
			return // the turn.finished event covers replies
		}
		p := map[string]any{"channel": m.Channel, "origin": m.Origin, "proactive": m.Proactive}
		kind := "message.delivered"
		if err != nil {
			kind, p["error"] = "message.failed", err.Error()
		}
		emit(kind, spine.ConversationKey(m.Channel, m.ChatID), p)
	})
	return nil
}

// FlushEvents returns once every event emitted before it is in the event log.
func (r *Runtime) FlushEvents(ctx context.Context) error { return r.writer.Flush(ctx) }

// emit records a notable event without blocking.
func (r *Runtime) emit(kind, conversation string, payload any) {
	r.writer.Enqueue(kind, conversation, payload)
}

// startRecovery is ServiceRecovery: age-based retention must hold on an
// idle gateway too, not only every few hundred appends; owner questions a
// previous process left waiting are recovered.
func (r *Runtime) startRecovery(ctx context.Context) error {
	rep, err := r.questions.Recover(ctx)
	if err != nil {
		return fmt.Errorf("runtime: recover owner questions: %w", err)
	}
	r.log.Info("owner questions recovered", "report", fmt.Sprintf("%+v", rep))
	r.Go("events-prune", func(ctx context.Context) error {
		for {
			if err := clock.Sleep(ctx, r.clk, time.Hour); err != nil {
				return nil
			}
			if _, err := r.events.Prune(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("event log prune failed", "err", err)
			}
		}
	})
	return nil
}
