// Package textcut shortens text for prompts, logs and state files without
// ever splitting a UTF-8 character, for every Sentinel package.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks text that was cut.
const Ellipsis = "…"

// Prefix returns the longest prefix of s of at most n bytes that ends on a
// rune boundary. It is the one place a Sentinel byte limit is applied.
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Cut returns s unchanged when it fits in n bytes, else its rune-safe
// prefix of n bytes followed by Ellipsis.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Ellipsis
}

// Line flattens s to one line (runs of white space become one space) and
// cuts it to n bytes.
func Line(s string, n int) string {
	return Cut(strings.Join(strings.Fields(s), " "), n)
}
