package cron

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunLogTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cron", "runs.jsonl")
	l := NewRunLog(path)
	if err := l.Append(Run{JobID: "a", ScheduledAt: t0, Outcome: StatusDelivered}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"job_id":"torn","scheduled_at":"2026-06-01T09:0`)
	f.Close()
	if err := l.Append(Run{JobID: "b", ScheduledAt: t0.Add(time.Minute), Outcome: StatusDelivered}); err != nil {
		t.Fatal(err)
	}
	runs, err := l.Tail("", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].JobID != "a" || runs[1].JobID != "b" {
		t.Fatalf("tail = %+v", runs)
	}
	if runs, _ := l.Tail("b", 1); len(runs) != 1 {
		t.Fatalf("tail b = %+v", runs)
	}
	var all []string
	if err := l.All(func(r Run) { all = append(all, r.JobID) }); err != nil || len(all) != 2 {
		t.Fatalf("all = %v (%v)", all, err)
	}
}
