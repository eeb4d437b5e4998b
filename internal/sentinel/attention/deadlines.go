package attention

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/textcut"
)

// Deadlines lists dated lines of MEMORY.md and the HISTORY.md tail that fall
// from Overdue ago to Horizon ahead, soonest first. A date is YYYY-MM-DD,
// optionally followed by HH:MM; the timestamp that opens every history line
// is the log's own and is not a deadline.
type Deadlines struct {
	Horizon time.Duration // look-ahead (default 14 days)
	Overdue time.Duration // how long a passed date stays listed (default 1 day)
	Max     int           // items listed (default 10)
}

// Section is "Deadlines".
func (Deadlines) Section() string { return SectionDeadlines }

var (
	dateRe = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2}))?`)
	// historyPrefix is memory.AppendHistory's "- <RFC3339> [conv] role: ":
	// the log's own timestamp is not a deadline, and dropping the role lets
	// the owner's line and the assistant's echo of it collapse into one.
	historyPrefix = regexp.MustCompile(`^\s*[-*]?\s*\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})\s+(?:\[[^\]]*\]\s+)?(?:(?:user|assistant|answer|system|tool):\s+)?`)
)

const lineMax = 160

// Item is one dated line the producer lists.
type Item struct {
	// At is the local date, at midnight unless HasTime.
	At      time.Time
	HasTime bool
	Text    string
	Source  string // "memory" or "history"
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
		fmt.Fprintf(&b, "- %s (%s, %s): %s\n", when, relDay(today, midnight(it.At)), it.Source, it.Text)
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
	scan := func(text, source string, strip bool) {
		for line := range strings.SplitSeq(text, "\n") {
			if strip {
				if systemHistoryLine(line) {
					continue
				}
				line = historyPrefix.ReplaceAllString(line, "")
			}
			line = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(line), "-*# ")), " ")
			if line == "" {
				continue
			}
			for _, m := range dateRe.FindAllStringSubmatch(line, -1) {
				at, hasTime, ok := parseDate(m, loc)
				if !ok {
					continue
				}
				day := midnight(at)
				if day.Before(today.Add(-overdue)) || day.After(today.Add(horizon)) {
					continue
				}
				key := at.Format(time.DateTime) + "|" + strings.ToLower(line)
				if seen[key] {
					continue
				}
				seen[key] = true
				items = append(items, Item{At: at, HasTime: hasTime, Text: cut(line, lineMax), Source: source})
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

func parseDate(m []string, loc *time.Location) (time.Time, bool, bool) {
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	d, _ := strconv.Atoi(m[3])
	if mo < 1 || mo > 12 || d < 1 || d > 31 {
		return time.Time{}, false, false
	}
	hh, mm, hasTime := 0, 0, m[4] != ""
	if hasTime {
		hh, _ = strconv.Atoi(m[4])
		mm, _ = strconv.Atoi(m[5])
		if hh > 23 || mm > 59 {
			hasTime, hh, mm = false, 0, 0
		}
	}
	t := time.Date(y, time.Month(mo), d, hh, mm, 0, 0, loc)
	if t.Day() != d { // 2025-02-31 normalises into March: not a date
		return time.Time{}, false, false
	}
	return t, hasTime, true
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
