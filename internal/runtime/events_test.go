package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// recorder is an event-log write func that can be held blocked.
type recorder struct {
	mu      sync.Mutex
	recs    []eventlog.Record
	batches int
	entered chan struct{} // receives once per write call, if set
	release chan struct{} // each write waits on it, if set
}

func (r *recorder) write(_ context.Context, recs []eventlog.Record) error {
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.release != nil {
		<-r.release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, recs...)
	r.batches++
	return nil
}

// A writer stuck on SQLite never holds up Hub.Post: the queue fills, the
// rest are dropped and counted, and once the writer catches up the log says
// how many were lost.
func TestEventWriterBlockedNeverBlocksPost(t *testing.T) {
	defer goleak.VerifyNone(t)
	const queue, posts = 4, 50
	rec := &recorder{entered: make(chan struct{}, posts), release: make(chan struct{})}
	w := newEventWriter(rec.write, queue, slog.New(slog.DiscardHandler))
	hub := spine.NewHub(slog.New(slog.DiscardHandler))
	hub.Register("x", spine.OutletFunc(func(context.Context, spine.Message) error { return nil }))
	hub.Watch(func(m spine.Message, err error) { w.Enqueue("message.delivered", m.ChatID, nil) })

	post := func(i int) {
		if err := hub.Post(context.Background(), spine.Message{Channel: "x", ChatID: fmt.Sprint(i)}); err != nil {
			t.Errorf("Post %d: %v", i, err)
		}
	}
	post(0)
	<-rec.entered // the writer holds event 0 and is now blocked
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		for i := 1; i < posts; i++ {
			post(i)
		}
	}()
	select {
	case <-posted:
	case <-time.After(10 * time.Second):
		t.Fatal("Hub.Post blocked behind the event writer")
	}
	close(rec.release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, r := range rec.recs {
		if r.Kind == KindEventsDropped {
			got = append(got, fmt.Sprintf("dropped:%v", r.Payload.(map[string]any)["count"]))
			continue
		}
		got = append(got, r.Conversation)
	}
	want := []string{"0", "1", "2", "3", "4", fmt.Sprintf("dropped:%d", posts-1-queue)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
}

// Under normal load every event reaches the log, in emission order, batched,
// and an unencodable payload costs only itself.
func TestEventWriterRecordsInOrder(t *testing.T) {
	cases := []struct {
		name string
		n    int
		bad  int // index of an unencodable payload, -1 for none
	}{
		{"one", 1, -1},
		{"many", 2000, -1},
		{"bad payload in a batch", 300, 150},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			ctx := context.Background()
			db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			l, err := eventlog.Open(ctx, db, eventlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			writes, write := 0, logWriter(l)
			w := newEventWriter(func(ctx context.Context, recs []eventlog.Record) error {
				writes++ // only the writer goroutine calls this
				return write(ctx, recs)
			}, eventQueueSize, slog.New(slog.DiscardHandler))
			for i := range tc.n {
				var payload any = map[string]int{"i": i}
				if i == tc.bad {
					payload = map[string]any{"c": make(chan int)}
				}
				w.Enqueue("test.event", "c:1", payload)
			}
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			var evs []eventlog.Event
			for after := int64(0); ; {
				page, _, err := l.Tail(ctx, after, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				evs = append(evs, page...)
				after = page[len(page)-1].Seq
			}
			next := 0
			for _, ev := range evs {
				if next == tc.bad {
					next++
				}
				var p struct{ I int }
				if err := json.Unmarshal(ev.Payload, &p); err != nil || ev.Kind != "test.event" || p.I != next {
					t.Fatalf("event %d = %s %s, want test.event i=%d", ev.Seq, ev.Kind, ev.Payload, next)
				}
				next++
			}
			if next != tc.n && !(next == tc.n-1 && tc.bad == tc.n-1) {
				t.Fatalf("recorded up to %d of %d", next, tc.n)
			}
			if tc.n > eventBatchMax && writes >= tc.n {
				t.Fatalf("%d writes for %d events: not batched", writes, tc.n)
			}
		})
	}
}

// Enqueue runs inside Hub.Post and the turn observers.
func BenchmarkEventWriterEnqueue(b *testing.B) {
	w := newEventWriter(func(context.Context, []eventlog.Record) error { return nil }, eventQueueSize, slog.New(slog.DiscardHandler))
	defer w.Close(context.Background())
	p := map[string]any{"channel": "tui", "origin": "user"}
	b.ReportAllocs()
	for b.Loop() {
		w.Enqueue("message.delivered", "tui:main", p)
	}
}
