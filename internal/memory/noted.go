package memory

import (
	"regexp"
	"strings"
	"time"
)

// A line Raven adds to MEMORY.md ends with the day it was noted:
// "- dentist Friday 15:00 (noted 2026-12-01)". The stamp says when the line
// was written, so its informal dates resolve against that day, and it is
// never itself a deadline.
const notedLayout = "(noted " + time.DateOnly + ")"

var notedRe = regexp.MustCompile(`\s*\(noted (\d{4}-\d{2}-\d{2})\)\s*$`)

// Noted returns line with the day t it was noted appended.
func Noted(line string, t time.Time) string {
	return line + " " + t.Format(notedLayout)
}

// CutNoted splits a line ending in a noted stamp into the line without it
// and the day it names (midnight in loc); ok is false when it has none.
func CutNoted(line string, loc *time.Location) (rest string, day time.Time, ok bool) {
	if !strings.Contains(line, "(noted ") {
		return line, time.Time{}, false
	}
	m := notedRe.FindStringSubmatchIndex(line)
	if m == nil {
		return line, time.Time{}, false
	}
	d, err := time.ParseInLocation(time.DateOnly, line[m[2]:m[3]], loc)
	if err != nil {
		return line, time.Time{}, false
	}
	return line[:m[0]], d, true
}
