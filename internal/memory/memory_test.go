package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "HISTORY.md")
	if got, err := ReadTail(p, 100); err != nil || got != "" {
		t.Fatalf("missing file: %q, %v", got, err)
	}
	os.WriteFile(p, []byte("line one\nline two\nline three\n"), 0o600)
	cases := []struct {
		max  int
		want string
	}{
		{1000, "line one\nline two\nline three\n"},
		{15, "line three\n"}, // starts mid "line two": partial line dropped
		{0, ""},
	}
	for _, c := range cases {
		got, err := ReadTail(p, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("max %d: got %q want %q", c.max, got, c.want)
		}
	}
}

func TestSpliceSectionKeepsOtherSections(t *testing.T) {
	md := "# Attention\n\nintro\n\n## routines\nold\n\n## owner notes\nmine, hand-written\n"
	got := SpliceSection(md, "routines", "new line")
	want := "# Attention\n\nintro\n\n## routines\nnew line\n\n## owner notes\nmine, hand-written\n"
	if got != want {
		t.Fatalf("splice:\n%q\nwant\n%q", got, want)
	}
	got = SpliceSection(got, "deadlines", "- tax 12-31")
	if !strings.HasSuffix(got, "\n\n## deadlines\n- tax 12-31\n") || !strings.Contains(got, "mine, hand-written") {
		t.Fatalf("append section: %q", got)
	}
	if sel := SelectSections(got, []string{"deadlines", "missing", "routines"}); sel != "## deadlines\n- tax 12-31\n## routines\nnew line\n\n" {
		t.Fatalf("select: %q", sel)
	}
}

func TestUpdateSectionSkipsUnchangedWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "attention.md")
	ctx := context.Background()
	if ch, err := UpdateSection(ctx, p, "a", "x", 1<<20); err != nil || !ch {
		t.Fatalf("first: %v %v", ch, err)
	}
	st1, _ := os.Stat(p)
	if ch, err := UpdateSection(ctx, p, "a", "x", 1<<20); err != nil || ch {
		t.Fatalf("second: changed=%v err=%v, want unchanged", ch, err)
	}
	st2, _ := os.Stat(p)
	if !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatal("unchanged section rewrote the file")
	}
}

func TestAppendHistoryOneLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory", "HISTORY.md")
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if err := AppendHistory(p, at, "cli:direct", "user", "hello\nworld"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "- 2026-11-30T09:00:00Z [cli:direct] user: hello world\n" {
		t.Fatalf("history = %q", b)
	}
}

// makeHistory creates a sparse file of size bytes ending in real lines, fast.
func makeHistory(b *testing.B, size int64) string {
	p := filepath.Join(b.TempDir(), "HISTORY.md")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	tail := strings.Repeat("- 2026-11-30T09:00:00Z [cli:direct] user: some earlier message\n", 200)
	f.Truncate(size - int64(len(tail)))
	f.Seek(0, 2)
	f.WriteString(tail)
	f.Close()
	return p
}

func BenchmarkReadTail(b *testing.B) {
	for _, size := range []int64{1 << 20, 100 << 20} {
		p := makeHistory(b, size)
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ReadTail(p, 8<<10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestTailAndHeadKeepRunesWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.md")
	os.WriteFile(p, []byte("ééééé"), 0o600) // 10 bytes, no newline
	tail, err := TailBytes(p, 5)            // starts inside an é
	if err != nil || string(tail) != "éé" {
		t.Fatalf("tail = %q, %v; want whole runes", tail, err)
	}
	head, err := HeadBytes(p, 5) // ends inside an é
	if err != nil || string(head) != "éé" {
		t.Fatalf("head = %q, %v; want whole runes", head, err)
	}
}
