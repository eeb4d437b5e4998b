package attention

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// OpenLoops lists what the owner is still waiting on: questions they asked
// in a session that got no reply (the owner's message is the session's
// last, past a grace period) and unchecked "- [ ]" items in MEMORY.md.
type OpenLoops struct {
	// Grace: a question younger than this may still be being answered
	// (default 10m).
	Grace time.Duration
	// Window: older unanswered questions are dropped (default 72h).
	Window time.Duration
	Max    int // items listed (default 10)
}

// Section is "Open loops".
func (OpenLoops) Section() string { return SectionOpenLoops }

var checkboxRe = regexp.MustCompile(`^\s*[-*+]\s+\[ \]\s+(.+)$`)

// Produce renders the section body; "" when nothing is open.
func (o OpenLoops) Produce(_ context.Context, in Input) (string, error) {
	grace, window, limit := o.Grace, o.Window, o.Max
	if grace <= 0 {
		grace = 10 * time.Minute
	}
	if window <= 0 {
		window = 72 * time.Hour
	}
	if limit <= 0 {
		limit = 10
	}
	loc := in.Location
	if loc == nil {
		loc = time.Local
	}
	type loop struct {
		at   time.Time
		line string
	}
	var qs []loop
	for _, s := range in.Sessions {
		if s.LastUserAt.IsZero() || s.LastUserAt.Before(s.LastActive) || !strings.Contains(s.LastUser, "?") || systemSession(s) {
			continue
		}
		age := in.Now.Sub(s.LastUserAt)
		if age < grace || age > window {
			continue
		}
		// An absolute time, not "3h ago": the body must not change every
		// tick or compare-and-skip would never skip.
		qs = append(qs, loop{s.LastUserAt, fmt.Sprintf("- %s asked %s, no reply yet: %q", s.Key,
			s.LastUserAt.In(loc).Format("2006-01-02 15:04"), cut(strings.Join(strings.Fields(s.LastUser), " "), lineMax))})
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].at.After(qs[j].at) })
	var lines []string
	for _, q := range qs {
		lines = append(lines, q.line)
	}
	for line := range strings.SplitSeq(in.Memory, "\n") {
		if m := checkboxRe.FindStringSubmatch(strings.TrimRight(line, "\r")); m != nil {
			lines = append(lines, "- "+cut(strings.TrimSpace(m[1]), lineMax)+" (unchecked in MEMORY.md)")
		}
	}
	if len(lines) > limit {
		lines = lines[:limit]
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}
