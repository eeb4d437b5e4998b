package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

const outsideSecret = "OUTSIDE-SECRET"

// outsideFixture lays out, beside the workspace, a file and a directory the
// tools must never read or write.
func outsideFixture(t *testing.T, base string) (secretFile, secretDir string) {
	t.Helper()
	secretFile = filepath.Join(base, "secret.txt")
	secretDir = filepath.Join(base, "secretdir")
	if err := os.WriteFile(secretFile, []byte(outsideSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretDir, "f.txt"), []byte(outsideSecret+" old_text"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A name that shows up in list_dir output if the listing escapes.
	if err := os.WriteFile(filepath.Join(secretDir, outsideSecret+".marker"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return secretFile, secretDir
}

// TestFileToolsConcurrentSwapper attacks the tools the way a hostile process
// sharing the machine would: while thousands of tool calls run, one goroutine
// flips "f" between a real file and a symlink to a file outside, and "d"
// between a real directory and a symlink to a directory outside. A tool that
// checks the path and opens it later reads or writes outside in that window.
func TestFileToolsConcurrentSwapper(t *testing.T) {
	ws, base := newWS(t)
	secretFile, secretDir := outsideFixture(t, base)
	root := ws.Root()
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("inside old_text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("inside old_text"), 0o600); err != nil {
		t.Fatal(err)
	}

	j := func(n string) string { return filepath.Join(root, n) }
	// Relative and absolute links for f, so neither kind of escape is missed.
	links := map[string]string{".f-abs": secretFile, ".f-rel": "../secret.txt", ".d-link": secretDir}
	for name, target := range links {
		if err := os.Symlink(target, j(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := exchange(j(".f-abs"), j(".f-abs")); err != nil {
		t.Skipf("cannot swap entries atomically here: %v", err)
	}

	stop := make(chan struct{})
	var swaps atomic.Int64
	var swapWG sync.WaitGroup
	swapWG.Add(1)
	go func() {
		defer swapWG.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			link := ".f-abs"
			if i%2 == 1 {
				link = ".f-rel"
			}
			// A write through "f" while it is the link replaces the link
			// by a file, and the next exchange then moves that file to the
			// link's spare name: put the link back.
			if fi, err := os.Lstat(j(link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				os.Remove(j(link))
				os.Symlink(links[link], j(link))
			}
			exchange(j("f"), j(link))
			exchange(j("f"), j(link))
			exchange(j("d"), j(".d-link"))
			exchange(j("d"), j(".d-link"))
			swaps.Add(1)
		}
	}()

	r := NewRegistry(NewReadFile(ws), NewWriteFile(ws), NewEditFile(ws), NewListDir(ws))
	ctx := context.Background()
	calls := []struct{ name, args string }{
		{"read_file", `{"path":"f"}`},
		{"read_file", `{"path":"d/f.txt"}`},
		{"write_file", `{"path":"d/w.txt","content":"written"}`},
		{"write_file", `{"path":"f","content":"inside old_text"}`},
		{"edit_file", `{"path":"d/f.txt","old_text":"old_text","new_text":"old_text"}`},
		{"edit_file", `{"path":"f","old_text":"old_text","new_text":"old_text"}`},
		{"list_dir", `{"path":"d"}`},
	}
	var leaks atomic.Int64
	var firstLeak atomic.Value
	const workers, perWorker = 4, 700
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				c := calls[(i+w)%len(calls)]
				out, err := r.Run(ctx, llm.ToolCall{Name: c.name, Arguments: c.args})
				msg := out
				if err != nil {
					msg += err.Error()
				}
				if strings.Contains(msg, outsideSecret) {
					leaks.Add(1)
					firstLeak.CompareAndSwap(nil, fmt.Sprintf("%s %s -> %q", c.name, c.args, msg))
				}
				if err != nil && (strings.Contains(err.Error(), base+"/secret") || strings.Contains(err.Error(), secretDir)) {
					leaks.Add(1)
					firstLeak.CompareAndSwap(nil, fmt.Sprintf("%s %s named an outside path: %v", c.name, c.args, err))
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	swapWG.Wait()

	if b, _ := os.ReadFile(secretFile); string(b) != outsideSecret {
		t.Errorf("outside file was overwritten: %q", b)
	}
	ents, _ := os.ReadDir(secretDir)
	for _, e := range ents {
		if e.Name() != "f.txt" && e.Name() != outsideSecret+".marker" {
			t.Errorf("a write landed outside the workspace: %s", e.Name())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(secretDir, "f.txt")); string(b) != outsideSecret+" old_text" {
		t.Errorf("outside file was edited: %q", b)
	}
	if n := leaks.Load(); n > 0 {
		t.Errorf("%d of %d calls returned outside content; first: %v", n, workers*perWorker, firstLeak.Load())
	}
	t.Logf("%d calls against %d swaps", workers*perWorker, swaps.Load())
}

// TestFileToolErrorsNameNoOutsidePath checks that what the model reads back
// never reveals where the workspace lives or what a link points at.
func TestFileToolErrorsNameNoOutsidePath(t *testing.T) {
	ws, base := newWS(t)
	secretFile, secretDir := outsideFixture(t, base)
	root := ws.Root()
	os.Symlink(secretFile, filepath.Join(root, "abs-link"))
	os.Symlink("../secret.txt", filepath.Join(root, "rel-link"))
	os.Symlink(secretDir, filepath.Join(root, "dir-link"))
	if err := os.Link(secretFile, filepath.Join(root, "hard-link")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "sub"), 0o700)
	os.WriteFile(filepath.Join(root, "sub", "a.md"), []byte("x"), 0o600)
	r := NewRegistry(NewReadFile(ws), NewWriteFile(ws), NewEditFile(ws), NewListDir(ws))
	cases := []struct {
		name, path string
		outside    bool
	}{
		{"read_file", "abs-link", true},
		{"read_file", "rel-link", true},
		{"read_file", "dir-link/f.txt", true},
		{"read_file", "hard-link", true},
		{"edit_file", "hard-link", true},
		{"read_file", "../secret.txt", true},
		{"read_file", secretFile, true},
		{"read_file", "/etc/passwd", true},
		{"read_file", "missing.md", false},
		{"read_file", filepath.Join(root, "missing.md"), false},
		{"read_file", "sub", false},
		{"write_file", "dir-link/new.txt", true},
		{"write_file", "sub/a.md/x", false},
		{"edit_file", "rel-link", true},
		{"edit_file", "missing.md", false},
		{"list_dir", "dir-link", true},
		{"list_dir", "missing", false},
		{"list_dir", "sub/a.md", false},
	}
	for _, c := range cases {
		t.Run(c.name+" "+c.path, func(t *testing.T) {
			args := map[string]string{"path": c.path}
			switch c.name {
			case "write_file":
				args["content"] = "x"
			case "edit_file":
				args["old_text"], args["new_text"] = "old_text", "y"
			}
			b, _ := json.Marshal(args)
			_, err := r.Run(context.Background(), llm.ToolCall{Name: c.name, Arguments: string(b)})
			if err == nil {
				t.Fatal("no error")
			}
			if c.outside != errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("err = %v, outside = %v", err, c.outside)
			}
			msg := err.Error()
			for _, bad := range []string{base, "/etc/passwd", secretDir, secretFile} {
				if strings.Contains(msg, bad) {
					t.Errorf("error names %q: %v", bad, msg)
				}
			}
		})
	}
	if b, _ := os.ReadFile(secretFile); string(b) != outsideSecret {
		t.Errorf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(secretDir, "new.txt")); err == nil {
		t.Error("write_file created a file outside")
	}
}

// BenchmarkReadFileInRoot measures read_file through os.Root (a few openat
// calls per path component) for a two-level path.
func BenchmarkReadFileInRoot(b *testing.B) {
	ws, err := NewWorkspace(filepath.Join(b.TempDir(), "ws"))
	if err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws.Root(), "a", "b"), 0o700)
	os.WriteFile(filepath.Join(ws.Root(), "a", "b", "c.md"), []byte("hello"), 0o600)
	r := NewReadFile(ws)
	args := json.RawMessage(`{"path":"a/b/c.md"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Run(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}
