package statefile

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const interruptEnv = "RAVEN_STATEFILE_INTERRUPT"

// interruptedWrite starts an atomic rewrite of path and is killed -9
// before the rename, as a crash mid-write would.
func interruptedWrite(path string) {
	tmp, err := CreateTemp(path)
	if err != nil {
		os.Exit(2)
	}
	tmp.WriteString(`{"half":`)
	tmp.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func TestSweepTempRemovesLeftoversOfInterruptedWrites(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := WriteAtomic(state, []byte(`{"ok":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A real process killed -9 mid-rewrite leaves its temp file.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), interruptEnv+"="+state)
	if err := cmd.Run(); err == nil {
		t.Fatal("child was not killed")
	}
	dead, _ := filepath.Glob(filepath.Join(dir, ".state.json.tmp-*"))
	if len(dead) != 1 {
		t.Fatalf("interrupted write left %v", dead)
	}
	now := time.Now()
	old := now.Add(-2 * TempMinAge)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("x"), 0o600)
		os.Chtimes(p, mtime, mtime)
		return p
	}
	// This process is alive and the file is young: a rewrite in progress.
	live, err := CreateTemp(filepath.Join(dir, "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	live.Close()
	legacyOld := mk(".config.json.tmp-123456789", old)
	legacyYoung := mk(".config.json.tmp-987654321", now)
	trimOld := mk(".feedback.jsonl.trim-42", old)
	deadButYoung := dead[0]
	keep := []string{
		live.Name(), legacyYoung,
		mk("state.json.lock", old),
		mk("notes.tmp", old),
		mk(".hidden", old),
		mk("raven.db.corrupt-20260101T000000.000000000Z", old),
	}
	os.Mkdir(filepath.Join(dir, ".dir.tmp-1-2"), 0o700)
	os.Chtimes(filepath.Join(dir, ".dir.tmp-1-2"), old, old)

	removed, err := SweepTemp(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{deadButYoung, legacyOld, trimOld}
	slices.Sort(want)
	if strings.Join(removed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("removed:\n%s\nwant:\n%s", strings.Join(removed, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range append(keep, state, filepath.Join(dir, ".dir.tmp-1-2")) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if got, _ := os.ReadFile(state); string(got) != `{"ok":true}` {
		t.Fatalf("state.json = %q", got)
	}
	if r, err := SweepTemp(filepath.Join(dir, "missing"), now); err != nil || r != nil {
		t.Fatalf("missing dir: %v %v", r, err)
	}
}

func TestProcessAlive(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pid  int
		want bool
	}{
		{os.Getpid(), true},
		{1, true}, // init: EPERM for a non-root user is still alive
		{cmd.Process.Pid, false},
		{0, false},
		{-1, false},
	}
	for _, tt := range tests {
		if got := ProcessAlive(tt.pid); got != tt.want {
			t.Errorf("ProcessAlive(%d) = %v", tt.pid, got)
		}
	}
}

func TestWriteAtomicKeepMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "attention.md")
	if err := WriteAtomicKeepMode(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v", st.Mode().Perm())
	}
	os.Chmod(p, 0o644)
	if err := WriteAtomicKeepMode(p, []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Fatalf("rewritten mode %v", st.Mode().Perm())
	}
	// Raven's own state is forced to perm whatever it was.
	if err := WriteAtomic(p, []byte("c"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("WriteAtomic mode %v", st.Mode().Perm())
	}
}

func TestSweepTempDirs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	old := time.Now().Add(-2 * TempMinAge)
	for _, d := range []string{a, b} {
		p := filepath.Join(d, ".x.json.tmp-1")
		os.WriteFile(p, nil, 0o600)
		os.Chtimes(p, old, old)
	}
	if n := SweepTempDirs(time.Now(), slog.New(slog.DiscardHandler), a, b, filepath.Join(a, "none")); n != 2 {
		t.Fatalf("removed %d", n)
	}
}
