package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAppendToSection(t *testing.T) {
	cases := []struct {
		name, md, heading, want string
	}{
		{"empty file", "", "Notes", "## Notes\n- x\n"},
		{"no section: appended after a blank line", "# Memory\nowner text", "Notes", "# Memory\nowner text\n\n## Notes\n- x\n"},
		{"no section, file ends in a blank line", "mine\n\n", "Notes", "mine\n\n## Notes\n- x\n"},
		{"last line of the section, before the gap", "## Notes\n- a\n\n## Mine\nkeep\n", "Notes", "## Notes\n- a\n- x\n\n## Mine\nkeep\n"},
		{"section at the end without a newline", "## Notes\n- a", "Notes", "## Notes\n- a\n- x\n"},
		{"empty section", "## Notes\n## Mine\n", "Notes", "## Notes\n- x\n## Mine\n"},
		{"first of two same-named sections", "## Notes\nA\n## Notes\nB\n", "Notes", "## Notes\nA\n- x\n## Notes\nB\n"},
		{"an H3 is not the section", "### Notes\nnot it\n", "Notes", "### Notes\nnot it\n\n## Notes\n- x\n"},
		{"CRLF owner file", "## Notes\r\n- a\r\n\r\n## Mine\r\n", "Notes", "## Notes\r\n- a\r\n- x\n\r\n## Mine\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, at := AppendToSection(c.md, c.heading, "- x")
			if got != c.want {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
			assertInsertion(t, c.md, got, at)
		})
	}
}

// assertInsertion: out is md with bytes inserted at at, nothing else.
func assertInsertion(t *testing.T, md, out string, at int) {
	t.Helper()
	if at < 0 || at > len(md) || len(out) < len(md) || out[:at] != md[:at] || out[len(out)-(len(md)-at):] != md[at:] {
		t.Fatalf("owner text changed around the insertion at %d:\n md  %q\n out %q", at, md, out)
	}
}

// FuzzAppendToSection: whatever the owner wrote, remembering only inserts,
// the line lands in the named section, and the section count grows by at
// most the one appended section.
func FuzzAppendToSection(f *testing.F) {
	for _, s := range []string{"", "## Notes\n- a\n", "x", "## Notes", "## Mine\n\n## Notes\n\n\n", "##Notes\n", "## Notes\r\n"} {
		f.Add(s, "- fact")
		f.Add(s, "## fake heading")
	}
	f.Fuzz(func(t *testing.T, md, line string) {
		line = strings.ReplaceAll(line, "\n", " ")
		out, at := AppendToSection(md, "Notes", line)
		assertInsertion(t, md, out, at)
		want := strings.TrimRight(line, "\n")
		if strings.HasPrefix(want, "#") {
			want = "\\" + want
		}
		if body, _ := SectionBody(out, "Notes"); !strings.Contains(body, want) {
			t.Fatalf("line %q not under ## Notes of %q", line, out)
		}
	})
}

func TestAppendToSectionFile(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "MEMORY.md")
	owner := "# My memory\n\nI wrote this.\n\n## Notes\n- old fact\n\n## Family\n- Ana's birthday is 3 May\n"
	os.WriteFile(p, []byte(owner), 0o640)
	has := func(line string) func(string) bool {
		return func(body string) bool { return strings.Contains(body, line) }
	}
	if ok, err := AppendToSectionFile(ctx, p, "Notes", "- new fact", 1<<20, has("- new fact")); err != nil || !ok {
		t.Fatalf("append: %v %v", ok, err)
	}
	got, _ := os.ReadFile(p)
	if want := strings.Replace(owner, "- old fact\n", "- old fact\n- new fact\n", 1); string(got) != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if ok, err := AppendToSectionFile(ctx, p, "Notes", "- new fact", 1<<20, has("- new fact")); err != nil || ok {
		t.Fatalf("second append of the same line wrote: %v %v", ok, err)
	}
	if _, err := AppendToSectionFile(ctx, p, "Notes", strings.Repeat("y", 200), 150, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

// Raven's writers serialise on the lock: concurrent remembers all land.
func TestAppendToSectionFileConcurrent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "MEMORY.md")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := AppendToSectionFile(context.Background(), p, "Notes", "- fact "+string(rune('a'+i)), 1<<20, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := os.ReadFile(p)
	if n := strings.Count(string(got), "- fact "); n != 8 || strings.Count(string(got), "## Notes") != 1 {
		t.Fatalf("%d facts in %q", n, got)
	}
}

// A symlinked MEMORY.md stays a symlink: the line goes into its target.
func TestAppendToSectionFileThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "vault", "memory.md")
	os.MkdirAll(filepath.Dir(target), 0o700)
	os.WriteFile(target, []byte("## Notes\n- a\n"), 0o600)
	link := filepath.Join(dir, "MEMORY.md")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if _, err := AppendToSectionFile(context.Background(), link, "Notes", "- b", 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "## Notes\n- a\n- b\n" {
		t.Fatalf("target = %q", b)
	}
}

// An editor saving (it takes no lock) after Raven read the file is never
// undone: the write is redone on the editor's save. An editor that keeps
// saving makes remember give up, with the last save intact.
func TestAppendToSectionFileEditorSaves(t *testing.T) {
	p := filepath.Join(t.TempDir(), "MEMORY.md")
	os.WriteFile(p, []byte("## Notes\n- a\n"), 0o600)
	saves := 0
	editor := func(max int) func(string) bool {
		return func(string) bool {
			// Called under the lock, after the read: the editor saves now.
			if saves < max {
				saves++
				os.WriteFile(p, []byte(fmt.Sprintf("## Notes\n- a\n- owner save %d\n", saves)), 0o600)
			}
			return false
		}
	}
	if ok, err := AppendToSectionFile(context.Background(), p, "Notes", "- raven", 1<<20, editor(1)); err != nil || !ok {
		t.Fatalf("append: %v %v", ok, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "## Notes\n- a\n- owner save 1\n- raven\n" {
		t.Fatalf("the owner's save was lost: %q", b)
	}
	saves = 0
	os.WriteFile(p, []byte("## Notes\n"), 0o600)
	if _, err := AppendToSectionFile(context.Background(), p, "Notes", "- raven", 1<<20, editor(100)); !errors.Is(err, ErrConcurrentEdit) {
		t.Fatalf("an editor saving every time: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != fmt.Sprintf("## Notes\n- a\n- owner save %d\n", saves) {
		t.Fatalf("the last save was not kept: %q", b)
	}
}
