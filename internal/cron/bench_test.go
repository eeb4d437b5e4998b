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
	s, err := NewService(Options{Store: &Store{}, Runs: &RunLog{}, Handler: func(context.Context, Job, time.Time) (Outcome, error) { return Outcome{}, nil },
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

// BenchmarkReload10k is the cost of re-reading a changed 10,000-job file.
func BenchmarkReload10k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "jobs.json")
	st := NewStore(path, clock.Real(), nil, time.Second)
	if err := st.Update(context.Background(), func(f *File) (bool, error) {
		f.Jobs = benchFile(b, 10_000).Jobs
		return true, nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.mu.Lock()
		st.loaded = false
		st.mu.Unlock()
		if _, err := st.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd is add-job latency on a free lock (read-modify-write with fsync).
func BenchmarkAdd(b *testing.B) {
	st := NewStore(filepath.Join(b.TempDir(), "jobs.json"), clock.Real(), nil, time.Second)
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h"}, time.Now())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
