package memory

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAppendHistoryAfterTornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory", "HISTORY.md")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, []byte("- 2026-11-30T10:00:00Z [cli:local] user: half a li"), 0o600)
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	if err := AppendHistory(p, at, "cli:local", "user", "next\nentry"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := "- 2026-11-30T10:00:00Z [cli:local] user: half a li\n- 2026-11-30T11:00:00Z [cli:local] user: next entry\n"
	if string(got) != want {
		t.Fatalf("HISTORY.md = %q, want %q", got, want)
	}
}
