package jsonl

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const shortWriteEnv = "RAVEN_JSONL_SHORT_WRITE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(shortWriteEnv); spec != "" {
		os.Exit(shortWriteChild(spec))
	}
	os.Exit(m.Run())
}

// shortWriteChild appends one record with the file size limit a few bytes
// past the end, so the kernel performs a short write, as on a full disk.
// spec is "path|room".
func shortWriteChild(spec string) int {
	path, roomS, _ := strings.Cut(spec, "|")
	room, _ := strconv.Atoi(roomS)
	st, err := os.Stat(path)
	if err != nil {
		return 2
	}
	signal.Ignore(syscall.SIGXFSZ)
	lim := uint64(st.Size()) + uint64(room)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return 3
	}
	if err := New(path, nil).Append(rec{ID: "lost", Pad: strings.Repeat("p", 200)}); err == nil {
		return 4 // the write was not cut short
	}
	return 0
}

func TestShortWriteOnFullDisk(t *testing.T) {
	f, logs := newFile(t)
	if err := f.Append(rec{ID: "before"}); err != nil {
		t.Fatal(err)
	}
	st0, _ := os.Stat(f.Path())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d", shortWriteEnv, f.Path(), 17))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	st1, _ := os.Stat(f.Path())
	if st1.Size() != st0.Size()+17 {
		t.Fatalf("short write left %d bytes, want 17", st1.Size()-st0.Size())
	}
	if err := f.Append(rec{ID: "after"}); err != nil {
		t.Fatal(err)
	}
	// The appender, not only the reader's recovery: the record after the
	// torn bytes is on a line of its own.
	data, _ := os.ReadFile(f.Path())
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[2] != `{"id":"after"}` {
		t.Fatalf("lines = %q", lines)
	}
	back, fwd := ids(t, f)
	if back != "after,before" || fwd != "before,after" {
		t.Fatalf("backward %q forward %q", back, fwd)
	}
	if !strings.Contains(logs.String(), "torn") {
		t.Fatalf("no warning:\n%s", logs)
	}
}
