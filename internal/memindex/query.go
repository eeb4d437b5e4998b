package memindex

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Query bounds: a longer query is cut, never an error.
const (
	MaxQueryBytes = 1000
	MaxQueryTerms = 16
)

// ErrEmptyQuery is returned for a query with no word to search for (only
// punctuation or operators).
var ErrEmptyQuery = errors.New("memindex: the query has no words to search for")

// ErrBadSince is matched by the error for a since that is neither a date
// nor a duration.
var ErrBadSince = errors.New("memindex: since must be a date (2026-11-30), a time (RFC 3339) or a duration back from now (36h, 7d)")

// Terms splits the owner's query into the words FTS5's unicode61 tokenizer
// would find in it (its default token characters: letters, numbers and
// private-use): everything else — quotes, parentheses, *, ^, :, +, - —
// separates words. Each word is then quoted, so no input is FTS5 syntax.
func Terms(q string) []string {
	if len(q) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(q[cut]) {
			cut--
		}
		q = q[:cut]
	}
	words := strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.In(r, unicode.L, unicode.N, unicode.Co)
	})
	if len(words) > MaxQueryTerms {
		words = words[:MaxQueryTerms]
	}
	return words
}

// MatchExpr renders terms as an FTS5 query: each a quoted string (so AND,
// OR, NOT and NEAR are words, not operators), joined by op ("AND" or "OR").
// Words are not prefixes: the porter stemmer already matches "dentists"
// to "dentist", and a prefix makes FTS5 merge every term it covers on each
// lookup, which alone cost several milliseconds over a year of history.
func MatchExpr(terms []string, op string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(parts, " "+op+" ")
}

// ParseSince reads a since bound: a date (midnight UTC), an RFC 3339 time,
// or a duration back from now (Go durations, plus "d" days and "w" weeks).
// "" is no bound.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			if v, err := strconv.ParseFloat(n, 64); err == nil && v >= 0 && v < 1e5 {
				return now.Add(-time.Duration(v * float64(unit))), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q", ErrBadSince, s)
}
