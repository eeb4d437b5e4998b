package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutNeverSplitsARune(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel…"},
		{"héllo", 2, "h…"}, // é is two bytes: 2 would split it
		{"日本語", 4, "日…"},
		{"日本語", 3, "日…"},
		{"日本語", 2, "…"},
		{"🙂🙂", 5, "🙂…"},
		{"abc", 0, "…"},
	}
	for _, tc := range tests {
		got := Cut(tc.s, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	for n := range 20 {
		s := strings.Repeat("ü€🙂", 3)
		if p := Prefix(s, n); !utf8.ValidString(p) || len(p) > n {
			t.Errorf("Prefix(%q, %d) = %q", s, n, p)
		}
	}
	if got := Line(" a\n\tb  c ", 3); got != "a b…" {
		t.Errorf("Line = %q", got)
	}
}
