package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrimTorn(t *testing.T) {
	long := strings.Repeat("x", 3*chunk) // a torn line longer than a read step
	for _, tc := range []struct{ name, in, want string }{
		{"whole lines kept", "{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}\n"},
		{"torn tail cut", "{\"a\":1}\n{\"b\":", "{\"a\":1}\n"},
		{"only a torn line", "{\"b\":", ""},
		{"empty", "", ""},
		{"long torn tail", "{\"a\":1}\n" + long, "{\"a\":1}\n"},
		{"long whole line then torn", long + "\n{", long + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := TrimTorn(path); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want {
				t.Fatalf("got %d bytes %.40q, want %d bytes %.40q", len(got), got, len(tc.want), tc.want)
			}
		})
	}
	if err := TrimTorn(filepath.Join(t.TempDir(), "missing.jsonl")); err != nil {
		t.Fatalf("missing file: %v", err)
	}
}
