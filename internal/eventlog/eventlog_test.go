package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)

func newLog(t testing.TB, opts Options) (*Log, *clock.Fake) {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	if opts.Clock == nil {
		opts.Clock = clk
	}
	l, err := Open(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); db.Close() })
	return l, clk
}

func TestAppendTail(t *testing.T) {
	l, clk := newLog(t, Options{})
	ctx := context.Background()
	if evs, oldest, err := l.Tail(ctx, 0, 10); err != nil || len(evs) != 0 || oldest != 1 {
		t.Fatalf("empty tail: %v %d %v", evs, oldest, err)
	}
	for i := 1; i <= 5; i++ {
		clk.Advance(time.Second)
		seq, err := l.Append(ctx, KindTurnStarted, "cli:1", map[string]int{"i": i})
		if err != nil || seq != int64(i) {
			t.Fatalf("append %d: seq %d %v", i, seq, err)
		}
	}
	seqs, err := l.AppendBatch(ctx, []Record{{Kind: "a"}, {Kind: "b", Payload: json.RawMessage(`{"x":1}`)}})
	if err != nil || fmt.Sprint(seqs) != "[6 7]" {
		t.Fatalf("batch: %v %v", seqs, err)
	}
	evs, oldest, err := l.Tail(ctx, 2, 3)
	if err != nil || oldest != 1 || len(evs) != 3 || evs[0].Seq != 3 || evs[2].Seq != 5 {
		t.Fatalf("tail: %+v %d %v", evs, oldest, err)
	}
	if string(evs[0].Payload) != `{"i":3}` || evs[0].Conversation != "cli:1" || !evs[0].Time.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("event: %+v", evs[0])
	}
	evs, _, _ = l.Tail(ctx, 5, 0)
	if len(evs) != 2 || evs[0].Payload != nil || string(evs[1].Payload) != `{"x":1}` {
		t.Fatalf("batch tail: %+v", evs)
	}
}

func TestBadInput(t *testing.T) {
	l, _ := newLog(t, Options{})
	ctx := context.Background()
	cases := []struct {
		name string
		run  func() error
	}{
		{"empty kind", func() error { _, err := l.Append(ctx, "", "", nil); return err }},
		{"long kind", func() error { _, err := l.Append(ctx, strings.Repeat("k", 65), "", nil); return err }},
		{"long conversation", func() error { _, err := l.Append(ctx, "k", strings.Repeat("c", 257), nil); return err }},
		{"huge payload", func() error { _, err := l.Append(ctx, "k", "", strings.Repeat("p", MaxPayloadBytes)); return err }},
		{"unmarshalable payload", func() error { _, err := l.Append(ctx, "k", "", func() {}); return err }},
		{"batch with a bad record", func() error { _, err := l.AppendBatch(ctx, []Record{{Kind: "ok"}, {Kind: ""}}); return err }},
		{"tail limit", func() error { _, _, err := l.Tail(ctx, 0, MaxTailLimit+1); return err }},
		{"negative after", func() error { _, _, err := l.Tail(ctx, -1, 1); return err }},
		{"negative subscribe", func() error { _, err := l.Subscribe(ctx, -1); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if last, _ := l.LastSeq(ctx); last != 0 {
		t.Fatalf("a rejected append was stored: last seq %d", last)
	}
}

func TestRetention(t *testing.T) {
	cases := []struct {
		name        string
		appends     int
		advance     time.Duration // between appends
		wantOldest  int64
		wantEntries int
	}{
		{"by count", 250, 0, 151, 100},
		{"by age", 20, 10 * time.Minute, 14, 7}, // now=200m, MaxAge 1h: events at >= 140m survive
		{"within bounds", 50, time.Second, 1, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, clk := newLog(t, Options{MaxCount: 100, MaxAge: time.Hour, PruneEvery: 10})
			ctx := context.Background()
			for i := 0; i < tc.appends; i++ {
				clk.Advance(tc.advance)
				if _, err := l.Append(ctx, "k", "", nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.Prune(ctx); err != nil {
				t.Fatal(err)
			}
			evs, oldest, err := l.Tail(ctx, 0, MaxTailLimit)
			if err != nil || oldest != tc.wantOldest || len(evs) != tc.wantEntries {
				t.Fatalf("oldest %d (want %d), %d entries (want %d), %v", oldest, tc.wantOldest, len(evs), tc.wantEntries, err)
			}
		})
	}
	// Sequences are never reused after everything is pruned.
	l, clk := newLog(t, Options{MaxAge: time.Minute})
	ctx := context.Background()
	l.Append(ctx, "k", "", nil)
	l.Append(ctx, "k", "", nil)
	clk.Advance(time.Hour)
	l.Prune(ctx)
	if _, oldest, _ := l.Tail(ctx, 0, 1); oldest != 3 {
		t.Fatalf("empty log oldest = %d, want 3", oldest)
	}
	if seq, _ := l.Append(ctx, "k", "", nil); seq != 3 {
		t.Fatalf("seq after prune = %d", seq)
	}
}

func TestSubscribeBackfillThenLive(t *testing.T) {
	l, _ := newLog(t, Options{})
	ctx := context.Background()
	for i := 0; i < 600; i++ { // more than one backfill page
		l.Append(ctx, "old", "", nil)
	}
	sub, err := l.Subscribe(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 5; i++ {
			if _, err := l.Append(ctx, "new", "", nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	want := int64(11)
	for want <= 605 {
		ev, ok := <-sub.Events()
		if !ok {
			t.Fatalf("closed early: %v", sub.Err())
		}
		if ev.Seq != want {
			t.Fatalf("got seq %d, want %d", ev.Seq, want)
		}
		want++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if _, ok := <-sub.Events(); ok {
		t.Fatal("event after close")
	}
	if !errors.Is(sub.Err(), context.Canceled) {
		t.Fatalf("err after close = %v", sub.Err())
	}
}

func TestSlowSubscriberDropped(t *testing.T) {
	l, _ := newLog(t, Options{SubscriberQueue: 4})
	ctx := context.Background()
	slow, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := l.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	got := make(chan int64, 100)
	go func() {
		for ev := range fast.Events() {
			got <- ev.Seq
		}
		close(got)
	}()
	// The slow reader never reads; its pump holds one event and its queue
	// four, so appends beyond that drop it. Append must not block meanwhile.
	for i := 1; i <= 20; i++ {
		if _, err := l.Append(ctx, "k", "", nil); err != nil {
			t.Fatal(err)
		}
		// Pace the fast reader so only the slow one falls behind.
		if seq := <-got; seq != int64(i) {
			t.Fatalf("fast got %d want %d", seq, i)
		}
	}
	n := 0
	for range slow.Events() {
		n++
	}
	if !errors.Is(slow.Err(), ErrSlowSubscriber) {
		t.Fatalf("slow err = %v", slow.Err())
	}
	if n == 0 || n >= 20 {
		t.Fatalf("slow received %d events before the drop", n)
	}
	if fast.Err() != nil {
		t.Fatalf("fast subscriber affected: %v", fast.Err())
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	l, _ := newLog(t, Options{})
	sub, err := l.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for range sub.Events() {
	}
	if !errors.Is(sub.Err(), ErrClosed) {
		t.Fatalf("err = %v", sub.Err())
	}
	if _, err := l.Append(context.Background(), "k", "", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	sub.Close()
}

func BenchmarkAppend(b *testing.B) {
	l, _ := newLog(b, Options{Clock: clock.Real()})
	ctx := context.Background()
	payload := map[string]any{"conversation": "cli:1", "tokens": 123}
	for b.Loop() {
		if _, err := l.Append(ctx, KindTurnFinished, "cli:1", payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkAppendBatch100(b *testing.B) {
	l, _ := newLog(b, Options{Clock: clock.Real()})
	ctx := context.Background()
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = Record{Kind: KindTurnFinished, Conversation: "cli:1", Payload: map[string]int{"i": i}}
	}
	for b.Loop() {
		if _, err := l.AppendBatch(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkTail1000(b *testing.B) {
	l, _ := newLog(b, Options{Clock: clock.Real()})
	ctx := context.Background()
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Kind: KindTurnFinished, Conversation: "cli:1", Payload: map[string]int{"i": i}}
	}
	if _, err := l.AppendBatch(ctx, recs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		evs, _, err := l.Tail(ctx, 0, 1000)
		if err != nil || len(evs) != 1000 {
			b.Fatal(len(evs), err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "events/s")
}
