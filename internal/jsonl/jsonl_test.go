package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type rec struct {
	ID  string `json:"id"`
	Pad string `json:"pad,omitempty"`
}

func newFile(t testing.TB) (*File, *bytes.Buffer) {
	var logs bytes.Buffer
	return New(filepath.Join(t.TempDir(), "d", "log.jsonl"), slog.New(slog.NewTextHandler(&logs, nil))), &logs
}

func raw(t testing.TB, path, s string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(s)
	fh.Close()
}

func ids(t *testing.T, f *File) (back, fwd string) {
	t.Helper()
	var b, w []string
	if err := f.Backward(0, func(line []byte) bool {
		var r rec
		if f.Decode(line, &r) {
			b = append(b, r.ID)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.Forward(func(line []byte) bool {
		var r rec
		if f.Decode(line, &r) {
			w = append(w, r.ID)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(b, ","), strings.Join(w, ",")
}

func TestTornAndDamagedLines(t *testing.T) {
	long := strings.Repeat("x", 3*chunk+17) // spans several chunks
	tests := []struct {
		name      string
		build     func(t *testing.T, f *File)
		back, fwd string
		warn      bool
		// appendedLast is the file's last line when the case ends with an append.
		appendedLast string
	}{
		{"clean", func(t *testing.T, f *File) {
			f.Append(rec{ID: "a"})
			f.Append(rec{ID: "b"})
		}, "b,a", "a,b", false, `{"id":"b"}`},
		{"torn tail then append starts a fresh line", func(t *testing.T, f *File) {
			f.Append(rec{ID: "a"})
			raw(t, f.Path(), `{"id":"tor`)
			f.Append(rec{ID: "b"})
		}, "b,a", "a,b", true, `{"id":"b"}`},
		{"torn tail, nothing after", func(t *testing.T, f *File) {
			f.Append(rec{ID: "a"})
			raw(t, f.Path(), `{"id":"tor`)
		}, "a", "a", true, ""},
		{"glued by an older writer: the record after the torn bytes is recovered", func(t *testing.T, f *File) {
			f.Append(rec{ID: "a"})
			raw(t, f.Path(), `{"id":"tor{"id":"b"}`+"\n")
		}, "b,a", "a,b", true, ""},
		{"garbage and blank lines", func(t *testing.T, f *File) {
			raw(t, f.Path(), "\n\nnot json\n")
			f.Append(rec{ID: "a"})
			raw(t, f.Path(), "   \n")
			f.Append(rec{ID: "b"})
		}, "b,a", "a,b", true, `{"id":"b"}`},
		{"lines longer than a chunk", func(t *testing.T, f *File) {
			f.Append(rec{ID: "a", Pad: long})
			f.Append(rec{ID: "b"})
			f.Append(rec{ID: "c", Pad: long})
		}, "c,b,a", "a,b,c", false, ""},
		{"torn start of file", func(t *testing.T, f *File) {
			raw(t, f.Path(), `{"i`)
			f.Append(rec{ID: "a"})
		}, "a", "a", true, `{"id":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, logs := newFile(t)
			os.MkdirAll(filepath.Dir(f.Path()), 0o700)
			tt.build(t, f)
			if data, _ := os.ReadFile(f.Path()); len(data) > 0 && tt.appendedLast != "" {
				lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
				if last := lines[len(lines)-1]; last != tt.appendedLast {
					t.Fatalf("last line %q, want the appended record alone", last)
				}
			}
			back, fwd := ids(t, f)
			if back != tt.back || fwd != tt.fwd {
				t.Fatalf("backward %q forward %q, want %q %q", back, fwd, tt.back, tt.fwd)
			}
			if got := strings.Contains(logs.String(), "torn"); got != tt.warn {
				t.Fatalf("warned = %v, want %v:\n%s", got, tt.warn, logs)
			}
			if tt.warn && strings.Count(logs.String(), "level=WARN") > strings.Count(logs.String(), "\n") {
				t.Fatal("unreachable")
			}
		})
	}
}

func TestWarnsOncePerBadLine(t *testing.T) {
	f, logs := newFile(t)
	f.Append(rec{ID: "a"})
	raw(t, f.Path(), `{"id":"tor`)
	f.Append(rec{ID: "b"})
	for range 3 {
		ids(t, f)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for one torn line:\n%s", n, logs)
	}
}

func TestLastAndMaxBytes(t *testing.T) {
	f, _ := newFile(t)
	for i := range 100 {
		if err := f.Append(rec{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Last[rec](f, 3, nil)
	if err != nil || len(got) != 3 || got[0].ID != "97" || got[2].ID != "99" {
		t.Fatalf("last 3 = %+v (%v)", got, err)
	}
	even, _ := Last(f, 2, func(r *rec) bool { return r.ID[len(r.ID)-1]%2 == 0 })
	if len(even) != 2 || even[0].ID != "96" || even[1].ID != "98" {
		t.Fatalf("last even = %+v", even)
	}
	var n int
	f.Backward(int64(len(`{"id":"99"}`)+1)*5, func([]byte) bool { n++; return true })
	if n != 5 {
		t.Fatalf("maxBytes of 5 lines yielded %d", n)
	}
	missing := New(filepath.Join(t.TempDir(), "none.jsonl"), nil)
	if got, err := Last[rec](missing, 5, nil); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
}

func TestAppendLineRejectsNewline(t *testing.T) {
	f, _ := newFile(t)
	if err := AppendLine(f.Path(), []byte("a\nb")); !errors.Is(err, ErrNewline) {
		t.Fatalf("err = %v", err)
	}
}

func TestConcurrentAppendsStayWhole(t *testing.T) {
	f, logs := newFile(t)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := f.Append(rec{ID: fmt.Sprintf("%d-%d", w, i), Pad: strings.Repeat("p", 500)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	f.Forward(func(line []byte) bool {
		var r rec
		if f.Decode(line, &r) {
			n++
		}
		return true
	})
	if n != writers*each || logs.Len() != 0 {
		t.Fatalf("%d whole records of %d; logs %s", n, writers*each, logs)
	}
	if st, _ := os.Stat(f.Path()); st.Mode().Perm() != DefaultPerm {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}

func TestBackwardAcrossChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	var want []string
	var buf bytes.Buffer
	for i := 0; i < 3000; i++ {
		l := fmt.Sprintf("%d-%s", i, strings.Repeat("x", i%211*(1+i%3)))
		if i == 1500 {
			l = strings.Repeat("y", 3*chunk) // longer than a chunk
		}
		want = append(want, l)
		buf.WriteString(l + "\n")
	}
	buf.WriteString("no-trailing-newline")
	want = append(want, "no-trailing-newline")
	os.WriteFile(path, buf.Bytes(), 0o600)
	var got []string
	if err := New(path, nil).Backward(0, func(l []byte) bool { got = append(got, string(l)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[len(want)-1-i] {
			t.Fatalf("line %d differs", i)
		}
	}
}
