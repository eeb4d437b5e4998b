package jsonl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	f, _ := newFile(b)
	r := rec{ID: "nudge-0123456789", Pad: strings.Repeat("p", 200)}
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTail reads the last 20 records of a 50 MiB log: the cost must
// follow the 20, not the file.
func BenchmarkTail(b *testing.B) {
	f, _ := newFile(b)
	line := []byte(fmt.Sprintf(`{"id":"x","pad":%q}`, strings.Repeat("p", 250)))
	var block []byte
	for range 4096 {
		block = append(append(block, line...), '\n')
	}
	os.MkdirAll(filepath.Dir(f.Path()), 0o700)
	for size := 0; size < 50<<20; size += len(block) {
		raw(b, f.Path(), string(block))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := Last[rec](f, 20, nil)
		if err != nil || len(got) != 20 {
			b.Fatal(len(got), err)
		}
	}
}
