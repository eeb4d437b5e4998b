package statefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

const childEnv = "RAVEN_STATEFILE_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	if path := os.Getenv(interruptEnv); path != "" {
		interruptedWrite(path)
	}
	os.Exit(m.Run())
}

type counter struct {
	N int `json:"n"`
}

// runChild performs read-modify-write increments as a separate process:
// spec is "path|count|section".
func runChild(spec string) int {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[1])
	s, err := Open(parts[0], Options{LockTimeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := 0; i < n; i++ {
		err := s.Update(context.Background(), func(tx *Tx) error {
			var c counter
			if _, err := tx.Get(parts[2], &c); err != nil {
				return err
			}
			c.N++
			return tx.Put(parts[2], c)
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	return 0
}

func newStore(t *testing.T, path string) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	s, err := Open(path, Options{
		Clock:  clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

func get(t *testing.T, s *Store, section string) (counter, bool) {
	t.Helper()
	var c counter
	var ok bool
	err := s.View(context.Background(), func(tx *Tx) error {
		var err error
		ok, err = tx.Get(section, &c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, ok
}

func put(t *testing.T, s *Store, section string, n int) {
	t.Helper()
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Put(section, counter{n}) }); err != nil {
		t.Fatal(err)
	}
}

func TestStoreRoundTripAndSectionsIndependent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sentinel", "state.json")
	a, _ := newStore(t, path)
	b, _ := newStore(t, path)

	if _, ok := get(t, a, "policy"); ok {
		t.Fatal("missing file must have no sections")
	}
	put(t, a, "policy", 1)
	put(t, b, "injector", 7)
	if c, ok := get(t, a, "injector"); !ok || c.N != 7 {
		t.Fatalf("a sees injector=%v,%v; want 7", c, ok)
	}
	if c, ok := get(t, b, "policy"); !ok || c.N != 1 {
		t.Fatalf("b sees policy=%v,%v; want 1", c, ok)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, []byte(`{"version":1,"gen":2,"sections":{`)) {
		t.Fatalf("unexpected file prefix: %.60s", data)
	}
}

func TestStoreViewRefusesPut(t *testing.T) {
	s, _ := newStore(t, filepath.Join(t.TempDir(), "state.json"))
	err := s.View(context.Background(), func(tx *Tx) error { return tx.Put("x", 1) })
	if err == nil {
		t.Fatal("Put inside View must fail")
	}
}

func TestStoreNoWriteWithoutPut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, _ := newStore(t, path)
	if err := s.Update(context.Background(), func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Update without Put created the file: %v", err)
	}
	put(t, s, "p", 1)
	st1, _ := os.Stat(path)
	if err := s.Update(context.Background(), func(tx *Tx) error { return errors.New("boom") }); err == nil {
		t.Fatal("callback error must propagate")
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) {
		t.Fatal("file rewritten although nothing was put")
	}
}

func TestStoreFailedCallbackDiscardsPuts(t *testing.T) {
	s, _ := newStore(t, filepath.Join(t.TempDir(), "state.json"))
	put(t, s, "p", 1)
	_ = s.Update(context.Background(), func(tx *Tx) error {
		_ = tx.Put("p", counter{99})
		return errors.New("abort")
	})
	if c, _ := get(t, s, "p"); c.N != 1 {
		t.Fatalf("aborted Put leaked: %d", c.N)
	}
}

func TestStoreRevChangesOnlyWithContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a, _ := newStore(t, path)
	b, _ := newStore(t, path)
	put(t, a, "policy", 1)
	rev := func(s *Store, sec string) uint64 {
		var r uint64
		_ = s.View(context.Background(), func(tx *Tx) error { r = tx.Rev(sec); return nil })
		return r
	}
	r1 := rev(b, "policy")
	if r1 == 0 {
		t.Fatal("present section must have non-zero rev")
	}
	put(t, a, "injector", 3) // another section changes
	if r2 := rev(b, "policy"); r2 != r1 {
		t.Fatalf("policy rev moved %d→%d although its bytes did not change", r1, r2)
	}
	put(t, a, "policy", 2)
	if r3 := rev(b, "policy"); r3 == r1 {
		t.Fatal("policy rev did not move after a peer changed it")
	}
}

func TestStoreCorruptFileMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"sections":{"policy":`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"view", "update"} {
		t.Run(op, func(t *testing.T) {
			if op == "update" {
				os.WriteFile(path, []byte("not json"), 0o600)
			}
			s, logs := newStore(t, path)
			called := false
			fn := func(tx *Tx) error { called = true; return nil }
			var err error
			if op == "view" {
				err = s.View(context.Background(), fn)
			} else {
				err = s.Update(context.Background(), fn)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("want *CorruptError, got %v", err)
			}
			if called {
				t.Fatal("callback ran on corrupt state")
			}
			if ce.Path != path || !strings.HasPrefix(ce.MovedTo, path+".corrupt-") {
				t.Fatalf("bad error fields: %+v", ce)
			}
			if _, err := os.Stat(ce.MovedTo); err != nil {
				t.Fatalf("moved file missing: %v", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("corrupt file still in place")
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
				t.Fatalf("want exactly one error log line, got %d: %s", n, logs)
			}
			// The next access starts clean and works.
			put(t, s, "policy", 5)
			if c, _ := get(t, s, "policy"); c.N != 5 {
				t.Fatal("store unusable after corrupt file")
			}
			os.Remove(ce.MovedTo)
		})
	}
}

func TestStoreNewerVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	content := []byte(`{"version":7,"sections":{"policy":{"n":1}}}`)
	os.WriteFile(path, content, 0o600)
	s, _ := newStore(t, path)
	for _, run := range []func(context.Context, func(*Tx) error) error{s.View, s.Update} {
		err := run(context.Background(), func(tx *Tx) error { return tx.Put("policy", 2) })
		if !errors.Is(err, ErrNewerVersion) {
			t.Fatalf("want ErrNewerVersion, got %v", err)
		}
		var ve *NewerVersionError
		if !errors.As(err, &ve) || ve.Found != 7 || ve.Supported != SupportedVersion {
			t.Fatalf("bad version error: %v", err)
		}
		if !strings.Contains(err.Error(), "7") || !strings.Contains(err.Error(), "1") {
			t.Fatalf("message must name both versions: %v", err)
		}
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) {
		t.Fatal("newer-version file was modified")
	}
}

func TestStoreHandEditedFileIsReloaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, _ := newStore(t, path)
	put(t, s, "policy", 1)
	// An owner rewrites the file by hand (no gen, different layout).
	os.WriteFile(path, []byte("{\n  \"version\": 1,\n  \"sections\": {\"policy\": {\"n\": 42}}\n}\n"), 0o600)
	if c, _ := get(t, s, "policy"); c.N != 42 {
		t.Fatalf("hand edit not picked up: %d", c.N)
	}
}

func TestStoreGoroutinesShareOneStore(t *testing.T) {
	s, _ := newStore(t, filepath.Join(t.TempDir(), "state.json"))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				err := s.Update(context.Background(), func(tx *Tx) error {
					var c counter
					if _, err := tx.Get("c", &c); err != nil {
						return err
					}
					c.N++
					return tx.Put("c", c)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c, _ := get(t, s, "c"); c.N != 200 {
		t.Fatalf("lost updates: %d", c.N)
	}
}

func TestStoreTwoProcessesNoLostUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "state.json")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+path+"|200|counter")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, outs[i])
		}
	}
	s, _ := newStore(t, path)
	if c, _ := get(t, s, "counter"); c.N != 400 {
		t.Fatalf("want 400 increments, got %d", c.N)
	}
}

func TestStoreLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	holder := NewLock(path + ".lock")
	if ok, err := holder.TryAcquire(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer holder.Release()
	s, err := Open(path, Options{LockTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(context.Background(), func(tx *Tx) error { return nil })
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("want ErrLockTimeout, got %v", err)
	}
}

func BenchmarkStoreViewUnchanged1MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.json")
	s, _ := Open(path, Options{})
	big := strings.Repeat("x", 1<<20)
	_ = s.Update(context.Background(), func(tx *Tx) error { return tx.Put("blob", big) })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.View(context.Background(), func(tx *Tx) error { _ = tx.Rev("blob"); return nil })
	}
}
