package main

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/cron"
)

// BenchmarkPrintJobs is the printing half of "raven cron list" (the store
// half is internal/cron's BenchmarkLoad): one buffered table, not a write
// per cell.
func BenchmarkPrintJobs(b *testing.B) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			jobs := make([]cron.Job, 0, n)
			for i := range n {
				spec := cron.Spec{Name: fmt.Sprintf("job %d", i), Message: "m", Every: fmt.Sprintf("%dm", 1+i%90), Deliver: i%2 == 0}
				if i%5 == 0 {
					spec.Channel, spec.To = "telegram", "42"
				}
				j, err := cron.NewJob(spec, now)
				if err != nil {
					b.Fatal(err)
				}
				if i%7 == 0 {
					j.Enabled, j.DisabledReason = false, "auto-decay: 3 fires with no response"
					j.LastRunAt, j.LastStatus = now, "delivered"
				}
				jobs = append(jobs, j)
			}
			w := &countingWriter{}
			b.ReportAllocs()
			for b.Loop() {
				if err := printJobs(w, jobs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.calls)/float64(b.N), "writes/op")
		})
	}
}

type countingWriter struct{ calls int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	return io.Discard.Write(p)
}
