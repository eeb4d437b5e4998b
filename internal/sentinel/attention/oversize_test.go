package attention

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
)

// An attention.md bigger than the read limit must be left alone, byte for
// byte and mode for mode, with a clear error — not truncated mid-line.
func TestOversizedAttentionIsNotRewritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "user_memory", "attention.md")
	var b strings.Builder
	b.WriteString("# Attention\n\n## Notes\n")
	for b.Len() < DefaultMaxBytes+1024 {
		b.WriteString("- a long note the owner keeps adding to, line after line\n")
	}
	b.WriteString("\n## Owner's last section\nkeep me\n")
	orig := b.String()
	writeFile(t, path, orig)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	mood := &funcProducer{name: "Mood", fn: func(Input) (string, error) { return "calm", nil }}
	other := &funcProducer{name: "Other", fn: func(Input) (string, error) { return "x", nil }}
	u := NewUpdater(Options{Path: path, Location: time.UTC, Clock: clock.NewFake(t0),
		Producers: []Producer{mood, other}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rep := u.Update(context.Background())
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != orig {
		t.Fatalf("attention.md changed: %d bytes, was %d; tail %q", len(got), len(orig), got[max(0, len(got)-60):])
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode = %v, want 0644", st.Mode().Perm())
	}
	if len(rep.Written) != 0 || rep.Failed["Mood"] == nil || rep.Failed["Other"] == nil {
		t.Fatalf("report = %+v", rep)
	}
	var tl *memory.TooLargeError
	if !errors.Is(rep.Failed["Mood"], memory.ErrTooLarge) || !errors.As(rep.Failed["Mood"], &tl) || tl.Limit != DefaultMaxBytes {
		t.Fatalf("error = %v, want a *memory.TooLargeError", rep.Failed["Mood"])
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("want one warning per tick, got %d:\n%s", n, logs.String())
	}
}

// Every rewrite keeps the owner's file mode.
func TestAttentionRewriteKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "user_memory", "attention.md")
	writeFile(t, path, "## Focus\nship\n")
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	mood := &funcProducer{name: "Mood", fn: func(Input) (string, error) { return "calm", nil }}
	u := NewUpdater(Options{Path: path, Location: time.UTC, Clock: clock.NewFake(t0), Producers: []Producer{mood}})
	if rep := u.Update(context.Background()); len(rep.Written) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v, want 0640", st.Mode().Perm())
	}
}
