package channels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitMessage(t *testing.T) {
	para := strings.Repeat("a", 30)
	tests := []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"short stays whole", "hello", 10, []string{"hello"}},
		{"empty", "", 10, []string{""}},
		{"exact limit", "0123456789", 10, []string{"0123456789"}},
		{"paragraph break preferred", para + "\n\n" + para + "\nxx", 70, []string{para + "\n\n" + para + "\nxx"}},
		{"paragraph break", para + "\n\n" + para, 40, []string{para, para}},
		{"line break", "aaaa bbbb\ncccc dddd", 12, []string{"aaaa bbbb", "cccc dddd"}},
		{"space", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"runt soft break avoided", "a bcdefghijklmnop", 8, []string{"a bcdefg", "hijklmno", "p"}},
		{"astral runes count two units", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"astral rune never split", "a😀b", 2, []string{"a", "😀", "b"}},
		{"cyrillic is one unit per rune", "привет мир", 6, []string{"привет", "мир"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitMessage(tt.in, tt.limit)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for _, p := range got {
				if utf16Len(p) > tt.limit || !utf8.ValidString(p) {
					t.Fatalf("piece %q breaks the limit or a rune", p)
				}
			}
		})
	}
}

func TestSplitMessageAtAPILimit(t *testing.T) {
	// 5000 emoji are 10000 UTF-16 units: three messages, none over 4096.
	in := strings.Repeat("😀", 5000)
	got := SplitMessage(in, TelegramLimit)
	if len(got) != 3 || strings.Join(got, "") != in {
		t.Fatalf("%d pieces; content preserved %v", len(got), strings.Join(got, "") == in)
	}
	for _, p := range got {
		if utf16Len(p) > TelegramLimit {
			t.Fatalf("piece of %d units", utf16Len(p))
		}
	}
}

func TestEscapeMarkdownV2(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello world", "hello world"},
		{"specials", "1.5 + (a) - b! #tag", `1\.5 \+ \(a\) \- b\! \#tag`},
		{"model markdown is literal", "**bold** _it_", `\*\*bold\*\* \_it\_`},
		{"backslash", `C:\dir`, `C:\\dir`},
		{"inline code kept", "run `ls -la` now.", "run `ls -la` now\\."},
		{"inline code escapes backslash", "`a\\b`", "`a\\\\b`"},
		{"fence with lang", "```go\nx := a.b()\n```", "```go\nx := a.b()\n```"},
		{"fence without lang", "```\n1.2\n```", "```\n1.2\n```"},
		{"unterminated fence literal", "```go\nx", "\\`\\`\\`go\nx"},
		{"lone backtick literal", "it`s", "it\\`s"},
		{"empty inline literal", "``", "\\`\\`"},
		{"emoji untouched", "done ✅.", "done ✅\\."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EscapeMarkdownV2(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func BenchmarkSplitAndEscape(b *testing.B) {
	in := strings.Repeat("Line with punctuation (a.b) and `code`.\n", 300)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		for _, p := range SplitMessage(in, TelegramLimit) {
			_ = EscapeMarkdownV2(p)
		}
	}
}
