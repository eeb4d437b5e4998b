package attention

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/textcut"
	"github.com/raven-agent/raven/internal/sentinel/when"
)

// Deadlines lists dated lines of MEMORY.md and the HISTORY.md tail that fall
// from Overdue ago to Horizon ahead, soonest first. Dates are found the way
// people write them (package when: ISO dates, weekdays, "tomorrow", "in 3
// days", "15 Dec", "12/15") and resolved against the time the line was
// written — a history line's own timestamp, MEMORY.md's modification time —
// in the owner's zone. The timestamp that opens every history line is the
// log's own and is not a deadline.
type Deadlines struct {
	Horizon time.Duration // look-ahead (default 14 days)
	Overdue time.Duration // how long a passed date stays listed (default 1 day)
	Max     int           // items listed (default 10)
	// Dates reads numeric dates in the owner's order (12/11: day or month first).
	Dates when.Resolver
}

// Section is "Deadlines".
func (Deadlines) Section() string { return SectionDeadlines }

var (
	// historyPrefix is memory.AppendHistory's "- <RFC3339> [conv] role: ":
	// the log's own timestamp is not a deadline, and dropping the role lets
	// the owner's line and the assistant's echo of it collapse into one.
	historyPrefix = regexp.MustCompile(`^\s*[-*]?\s*(\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2}))\s+(?:\[[^\]]*\]\s+)?(?:(user|assistant|answer|system|tool):\s+)?`)
)

const lineMax = 160

// Item is one dated line the producer lists.
type Item struct {
	// At is the local date, at midnight unless HasTime.
	At      time.Time `json:"at"`
	HasTime bool      `json:"has_time,omitempty"`
	Text    string    `json:"text"`
	Source  string    `json:"source"` // "memory" or "history"
	// From is the words the date was resolved from when they were not an
	// ISO date ("Friday 15:00"), and Written the moment it was resolved
	// against; both empty for an ISO date.
	From    string    `json:"from,omitempty"`
	Written time.Time `json:"written,omitzero"`
}

// Produce renders the section body; "" when nothing is due.
func (d Deadlines) Produce(_ context.Context, in Input) (string, error) {
	items := d.Items(in)
	if len(items) == 0 {
		return "", nil
	}
	loc := in.Location
	if loc == nil {
		loc = time.Local
	}
	today := midnight(in.Now.In(loc))
	var b strings.Builder
	for _, it := range items {
		when := it.At.Format(time.DateOnly)
		if it.HasTime {
			when += " " + it.At.Format("15:04")
		}
		// Day granularity keeps the body stable within a day, so ticks
		// between midnights do not rewrite the file.
		from := ""
		if it.From != "" {
			from = fmt.Sprintf(", from %q written %s", it.From, it.Written.In(loc).Format(time.DateOnly))
		}
		fmt.Fprintf(&b, "- %s (%s, %s%s): %s\n", when, relDay(today, midnight(it.At)), it.Source, from, it.Text)
	}
	return b.String(), nil
}

// Items are the dated lines from Overdue ago to Horizon ahead, soonest
// first, at most Max: what Produce renders, for consumers that need the
// dates (the daily plan).
func (d Deadlines) Items(in Input) []Item {
	horizon, overdue, limit := d.Horizon, d.Overdue, d.Max
	if horizon <= 0 {
		horizon = 14 * 24 * time.Hour
	}
	if overdue <= 0 {
		overdue = 24 * time.Hour
	}
	if limit <= 0 {
		limit = 10
	}
	loc := in.Location
	if loc == nil {
		loc = time.Local
	}
	now := in.Now.In(loc)
	today := midnight(now)
	var items []Item
	seen := map[string]bool{}
	memoryWritten := in.MemoryWritten
	if memoryWritten.IsZero() || memoryWritten.After(now) {
		memoryWritten = now
	}
	scan := func(text, source string, strip bool) {
		for line := range strings.SplitSeq(text, "\n") {
			written, owner := memoryWritten, true
			if strip {
				if systemHistoryLine(line) {
					continue
				}
				if m := historyPrefix.FindStringSubmatch(line); m != nil {
					if ts, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && !ts.After(now) {
						written = ts
					}
					owner = m[2] == "" || m[2] == "user" || m[2] == "answer"
				}
				line = historyPrefix.ReplaceAllString(line, "")
			}
			line = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(line), "-*# ")), " ")
			if rest, day, ok := memory.CutNoted(line, loc); ok {
				// A line Raven noted (remember) carries its day: what its
				// dates are read against, and no deadline itself.
				line, written = rest, day
			}
			if line == "" {
				continue
			}
			for _, m := range d.Dates.Find(line, written.In(loc)) {
				if m.Informal() && strip && (!owner || (m.Form == when.FormToday && !m.HasTime)) {
					// Raven's replies say "tomorrow" about anything, and
					// "today" in chat is chatter, not a deadline, unless
					// it carries a time.
					continue
				}
				at, hasTime := m.At, m.HasTime
				day := midnight(at)
				if day.Before(today.Add(-overdue)) || day.After(today.Add(horizon)) {
					continue
				}
				key := at.Format(time.DateTime) + "|" + strings.ToLower(line)
				if seen[key] {
					continue
				}
				seen[key] = true
				it := Item{At: at, HasTime: hasTime, Text: cut(line, lineMax), Source: source}
				if m.Informal() {
					it.From, it.Written = m.Text, written.In(loc)
				}
				items = append(items, it)
			}
		}
	}
	scan(in.Memory, "memory", false)
	scan(in.History, "history", true)
	sort.SliceStable(items, func(i, j int) bool { return items[i].At.Before(items[j].At) })
	if len(items) > limit {
		items = items[:limit]
	}
	return items
}

func midnight(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

func relDay(today, day time.Time) string {
	// Count calendar days, not 24h spans, so DST changes do not skew it.
	n := 0
	for d := today; d.Before(day); d = d.AddDate(0, 0, 1) {
		n++
	}
	for d := today; d.After(day); d = d.AddDate(0, 0, -1) {
		n--
	}
	switch {
	case n == 0:
		return "today"
	case n == 1:
		return "tomorrow"
	case n == -1:
		return "overdue since yesterday"
	case n < 0:
		return fmt.Sprintf("overdue by %d days", -n)
	}
	return fmt.Sprintf("in %d days", n)
}

func cut(s string, n int) string { return textcut.Cut(s, n) }
