package cron

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

func benchFile(b *testing.B, n int) *File {
	b.Helper()
	f := &File{Version: SchemaVersion}
	now := t0
	for i := 0; i < n; i++ {
		spec := Spec{Name: fmt.Sprintf("j%d", i), Message: "m", Deliver: true}
		switch i % 3 {
		case 0:
			spec.Every = fmt.Sprintf("%dm", 1+i%90)
		case 1:
			spec.Cron, spec.TZ = fmt.Sprintf("%d %d * * *", i%60, i%24), "Europe/Berlin"
		default:
			spec.At = now.Add(time.Duration(i+1) * time.Minute).Format(time.RFC3339)
		}
		if i%5 == 0 {
			spec.Channel, spec.To = "telegram", "1"
		}
		j, err := NewJob(spec, now)
		if err != nil {
			b.Fatal(err)
		}
		f.Jobs = append(f.Jobs, j)
	}
	return f
}

// BenchmarkNextWake10k is the loop's per-wake cost with 10,000 jobs
// already in memory (the store re-reads only when the file changed).
func BenchmarkNextWake10k(b *testing.B) {
	f := benchFile(b, 10_000)
	s, err := NewService(Options{Store: &Store{}, Runs: NewRunLog(filepath.Join(b.TempDir(), "runs.jsonl")), Handler: func(context.Context, Job, time.Time) (Outcome, error) { return Outcome{}, nil },
		Channels: []string{"cli"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w, _ := s.NextWake(f, t0); w.IsZero() {
			b.Fatal("no wake")
		}
	}
}

// seedStore writes n jobs as the snapshot at a fresh path.
func seedStore(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "jobs.json")
	st := NewStore(path, clock.Real(), nil, time.Second)
	if err := st.Update(context.Background(), func(f *File) (bool, error) {
		f.Jobs = benchFile(b, n).Jobs
		return true, nil
	}); err != nil {
		b.Fatal(err)
	}
	return path
}

var benchSizes = []int{1_000, 10_000}

// BenchmarkLoad is a fresh process's first read (cron list, cron add):
// one decode of the snapshot.
func BenchmarkLoad(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := seedStore(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewStore(path, clock.Real(), nil, time.Second).Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReloadAfterAdd is a running service's re-read after a peer
// added one job: one journal line, whatever the number of jobs.
func BenchmarkReloadAfterAdd(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := seedStore(b, n)
			svc := NewStore(path, clock.Real(), nil, time.Second)
			peer := NewStore(path, clock.Real(), nil, time.Second)
			if _, err := svc.Snapshot(context.Background()); err != nil {
				b.Fatal(err)
			}
			j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h"}, time.Now())
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				j.ID = ""
				if _, err := peer.Add(context.Background(), j); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := svc.Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAddAt is "raven cron add" at n jobs: a fresh Store (a new
// process) loads, then appends one journal line with fsync.
func BenchmarkAddAt(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := seedStore(b, n)
			j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h"}, time.Now())
			b.ReportAllocs()
			for b.Loop() {
				j.ID = ""
				if _, err := NewStore(path, clock.Real(), nil, time.Second).Add(context.Background(), j); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdd is add-job latency on a free lock in a long-lived process.
func BenchmarkAdd(b *testing.B) {
	st := NewStore(filepath.Join(b.TempDir(), "jobs.json"), clock.Real(), nil, time.Second)
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h"}, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		j.ID = ""
		if _, err := st.Add(context.Background(), j); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddLockHeldByPeer is add-job latency while a peer holds the
// lock for good: each call must fail with ErrLockTimeout after the
// configured timeout, never hang.
func BenchmarkAddLockHeldByPeer(b *testing.B) {
	path := filepath.Join(b.TempDir(), "jobs.json")
	peer := statefile.NewLock(path + ".lock")
	if err := peer.Acquire(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer peer.Release()
	st := NewStore(path, clock.Real(), nil, 100*time.Millisecond)
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h"}, time.Now())
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := st.Add(context.Background(), j)
		if !errors.Is(err, statefile.ErrLockTimeout) {
			b.Fatalf("err = %v", err)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
}
