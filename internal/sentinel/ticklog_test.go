package sentinel

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTickLogTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sentinel", "ticks.jsonl")
	at := time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)
	if err := AppendTick(path, TickRecord{Time: at, Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2025-03-12T10:01:00Z","act`)
	f.Close()
	if err := AppendTick(path, TickRecord{Time: at.Add(2 * time.Minute), Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTicks(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Reason != "first" || recs[1].Reason != "second" {
		t.Fatalf("ticks = %+v", recs)
	}
	if recs, _ := ReadTicks(path, 1); len(recs) != 1 || recs[0].Reason != "second" {
		t.Fatalf("last tick = %+v", recs)
	}
}
