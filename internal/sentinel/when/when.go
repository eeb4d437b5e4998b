// Package when finds the dates people write in notes — "Friday 15:00",
// "tomorrow", "in 3 days", "15 Dec", "12/15" — and resolves them against the time the note was written.
package when

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Order is how an all-numeric date like 12/11 is read.
type Order int

const (
	// DMY reads 12/11 as 12 November (most of the world).
	DMY Order = iota
	// MDY reads 12/11 as December 11 (the United States and a few others).
	MDY
)

// Config values of the date-order setting.
const (
	OrderAuto = "auto"
	OrderDMY  = "dmy"
	OrderMDY  = "mdy"
)

// mdyRegions write month first (CLDR's short date patterns).
var mdyRegions = map[string]bool{"US": true, "PH": true, "FM": true, "MH": true, "PW": true, "AS": true, "GU": true, "MP": true, "PR": true, "UM": true, "VI": true, "BZ": true}

// OrderFor turns the config value into an Order. "auto" reads the owner's
// locale from the environment (LC_ALL, then LC_TIME, then LANG): en_US.UTF-8
// is month first, anything else (or nothing) day first.
func OrderFor(setting string, getenv func(string) string) Order {
	switch setting {
	case OrderMDY:
		return MDY
	case OrderDMY:
		return DMY
	}
	if getenv == nil {
		return DMY
	}
	for _, k := range []string{"LC_ALL", "LC_TIME", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		v, _, _ = strings.Cut(v, ".")
		v, _, _ = strings.Cut(v, "@")
		_, region, ok := strings.Cut(v, "_")
		if ok && mdyRegions[strings.ToUpper(region)] {
			return MDY
		}
		return DMY
	}
	return DMY
}

// Form names the kind of expression a Match resolved.
type Form string

const (
	FormISO      Form = "iso"       // 2026-12-04, 2026-12-04 15:00
	FormWeekday  Form = "weekday"   // Friday, next Friday, Thursday's
	FormRelative Form = "relative"  // tomorrow, next week, in 3 days, end of month
	FormToday    Form = "today"     // today, tonight
	FormMonthDay Form = "month-day" // 15 Dec, December 15th
	FormNumeric  Form = "numeric"   // 12/15, 15.12.2026
)

// Match is one date found in a line.
type Match struct {
	// At is the resolved local date, at midnight unless HasTime.
	At      time.Time
	HasTime bool
	// Text is the words resolved ("Friday 15:00"), as written.
	Text string
	Form Form
}

// Informal reports whether the date needed resolving (anything but ISO).
func (m Match) Informal() bool { return m.Form != FormISO }

// Resolver finds dates in lines.
type Resolver struct {
	Order Order
}

const (
	weekdayNames = `monday|tuesday|wednesday|thursday|friday|saturday|sunday`
	monthNames   = `january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec`
	numberWords  = `\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve`
)

// patterns are compiled on first use, not at start-up: every raven process
// (a cron add, a status) imports this package, few parse a deadline.
type patterns struct {
	iso, weekday, today, relative, dayMonth, monthDay, numeric, clock *regexp.Regexp
}

var pat = sync.OnceValue(func() *patterns {
	return &patterns{
		iso:      regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2}))?`),
		weekday:  regexp.MustCompile(`(?i)\b(?:(this|next|on|by|until|till)\s+)?(` + weekdayNames + `)(?:'s)?\b`),
		today:    regexp.MustCompile(`(?i)\b(today|tonight|this evening)\b`),
		relative: regexp.MustCompile(`\b(the day after tomorrow|day after tomorrow|tomorrow|tmrw|next week|next month|this weekend|(?:the )?end of (?:the )?(?:week|month)|in (` + numberWords + `) (days?|weeks?|months?))\b`),
		dayMonth: regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+(` + monthNames + `)\.?(?:,?\s+(\d{4}))?\b`),
		monthDay: regexp.MustCompile(`\b(` + monthNames + `)\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?`),
		// Slashes (12/15, 12/15/26) or dots with a year (15.12.2026), so decimals
		// like 3.5 never read as dates; no digit, dot or slash around it, so
		// paths, versions and longer numbers stay what they are.
		numeric: regexp.MustCompile(`(?:^|[^\w/.])((\d{1,2})(?:/(\d{1,2})(?:/(\d{4}|\d{2}))?|\.(\d{1,2})\.(\d{4}|\d{2})))(?:$|[^\w/.])`),
		clock:   regexp.MustCompile(`(?i)\b(?:at\s+)?(?:([01]?\d|2[0-3]):([0-5]\d)(?:\s*(am|pm))?|(1[0-2]|0?[1-9])\s*(am|pm)|(noon|midday))\b`),
	}
})

var weekdays = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday}

var months = map[string]time.Month{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
	"jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
	"oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

var smallNumbers = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

type span struct {
	start, end int
	m          Match
}

// Find returns the dates in line, in the order written, each resolved
// against written (the moment the line was written, in the owner's zone).
// A clock time in the line ("15:00", "3pm") is attached to a date that has
// none when the line holds exactly one date and one time.
func (r Resolver) Find(line string, written time.Time) []Match {
	orig := line
	line = asciiLower(line) // same byte offsets as orig; the patterns are lower case
	day := midnight(written)
	var spans []span
	taken := func(s, e int) bool {
		for _, sp := range spans {
			if s < sp.end && e > sp.start {
				return true
			}
		}
		return false
	}
	add := func(s, e int, m Match, ok bool) {
		if ok && !taken(s, e) {
			m.Text = strings.TrimSpace(orig[s:e])
			spans = append(spans, span{s, e, m})
		}
	}
	// Each pattern runs only when a word it needs is in the line: most lines
	// hold no date, and a substring check costs a fraction of a regexp scan.
	digits := strings.ContainsAny(line, "0123456789")
	hasMonth := digits && containsAny(line, monthStems)
	for _, ix := range matches(pat().iso, line, digits && strings.Contains(line, "-")) {
		m, ok := iso(line, ix, written.Location())
		add(ix[0], ix[1], m, ok)
	}
	for _, ix := range matches(pat().dayMonth, line, hasMonth) {
		d, _ := strconv.Atoi(line[ix[2]:ix[3]])
		mo := months[strings.ToLower(line[ix[4]:ix[5]])]
		at, ok := monthDay(day, mo, d, group(line, ix, 3))
		add(ix[0], ix[1], Match{At: at, Form: FormMonthDay}, ok)
	}
	for _, ix := range matches(pat().monthDay, line, hasMonth) {
		if orig[ix[2]:ix[3]] == "may" {
			continue // "you may 5…": lower-case "may" before a number is the verb
		}
		mo := months[strings.ToLower(line[ix[2]:ix[3]])]
		d, _ := strconv.Atoi(line[ix[4]:ix[5]])
		at, ok := monthDay(day, mo, d, group(line, ix, 3))
		add(ix[0], ix[1], Match{At: at, Form: FormMonthDay}, ok)
	}
	for _, ix := range matches(pat().numeric, line, digits && strings.ContainsAny(line, "/.")) {
		at, ok := r.numeric(line, ix, day)
		add(ix[2], ix[3], Match{At: at, Form: FormNumeric}, ok)
	}
	for _, ix := range matches(pat().relative, line, containsAny(line, relativeWords)) {
		at, ok := relative(strings.ToLower(line[ix[2]:ix[3]]), group(line, ix, 2), group(line, ix, 3), day)
		add(ix[0], ix[1], Match{At: at, Form: FormRelative}, ok)
	}
	for _, ix := range matches(pat().today, line, containsAny(line, todayWords)) {
		add(ix[0], ix[1], Match{At: day, Form: FormToday}, true)
	}
	for _, ix := range matches(pat().weekday, line, strings.Contains(line, "day")) {
		mod := strings.ToLower(group(line, ix, 1))
		wd := weekdays[strings.ToLower(line[ix[4]:ix[5]])]
		s := ix[0]
		if mod != "this" && mod != "next" {
			s = ix[4] // "on Friday" resolves "Friday"
		}
		add(s, ix[1], Match{At: weekday(day, wd, mod == "next"), Form: FormWeekday}, true)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })

	if len(spans) == 1 && !spans[0].m.HasTime {
		var clocks [][]int
		for _, ix := range matches(pat().clock, line, digits || strings.Contains(line, "noon") || strings.Contains(line, "midday")) {
			if !taken(ix[0], ix[1]) {
				clocks = append(clocks, ix)
			}
		}
		if len(clocks) == 1 {
			if h, mi, ok := clockOf(line, clocks[0]); ok {
				sp := &spans[0]
				sp.m.At = time.Date(sp.m.At.Year(), sp.m.At.Month(), sp.m.At.Day(), h, mi, 0, 0, sp.m.At.Location())
				sp.m.HasTime = true
				if clocks[0][0] >= sp.end {
					sp.m.Text = strings.TrimSpace(orig[sp.start:clocks[0][1]])
				} else {
					sp.m.Text = strings.TrimSpace(orig[clocks[0][0]:sp.end])
				}
			}
		}
	}
	out := make([]Match, len(spans))
	for i, sp := range spans {
		out[i] = sp.m
	}
	return out
}

var (
	monthStems    = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	relativeWords = []string{"tomorrow", "tmrw", "next week", "next month", "weekend", "end of", " day", " week", " month"}
	todayWords    = []string{"today", "tonight", "this evening"}
)

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func matches(re *regexp.Regexp, line string, worth bool) [][]int {
	if !worth {
		return nil
	}
	return re.FindAllStringSubmatchIndex(line, -1)
}

// asciiLower lowers ASCII letters only, so every byte offset into the
// result is one into s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func group(line string, ix []int, g int) string {
	if ix[2*g] < 0 {
		return ""
	}
	return line[ix[2*g]:ix[2*g+1]]
}

func iso(line string, ix []int, loc *time.Location) (Match, bool) {
	y, _ := strconv.Atoi(line[ix[2]:ix[3]])
	mo, _ := strconv.Atoi(line[ix[4]:ix[5]])
	d, _ := strconv.Atoi(line[ix[6]:ix[7]])
	t, ok := date(y, time.Month(mo), d, loc)
	if !ok {
		return Match{}, false
	}
	m := Match{At: t, Form: FormISO}
	if ix[8] >= 0 {
		hh, _ := strconv.Atoi(line[ix[8]:ix[9]])
		mm, _ := strconv.Atoi(line[ix[10]:ix[11]])
		if hh <= 23 && mm <= 59 {
			m.At = t.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
			m.HasTime = true
		}
	}
	return m, true
}

// date is time.Date refusing days that normalise into the next month (31 Feb).
func date(y int, mo time.Month, d int, loc *time.Location) (time.Time, bool) {
	if mo < 1 || mo > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	t := time.Date(y, mo, d, 0, 0, 0, 0, loc)
	return t, t.Day() == d
}

// monthDay resolves a date without a year to the one nearest after the
// day written: a date more than two months past is next year's ("3 Jan"
// written on 20 December).
func monthDay(day time.Time, mo time.Month, d int, year string) (time.Time, bool) {
	if year != "" {
		y, _ := strconv.Atoi(year)
		return date(y, mo, d, day.Location())
	}
	t, ok := date(day.Year(), mo, d, day.Location())
	if !ok {
		return t, false
	}
	if t.Before(day.AddDate(0, -2, 0)) {
		return date(day.Year()+1, mo, d, day.Location())
	}
	return t, true
}

func (r Resolver) numeric(line string, ix []int, day time.Time) (time.Time, bool) {
	a, _ := strconv.Atoi(group(line, ix, 2))
	bs, ys, dotted := group(line, ix, 3), group(line, ix, 4), false
	if bs == "" {
		bs, ys, dotted = group(line, ix, 5), group(line, ix, 6), true
	}
	b, _ := strconv.Atoi(bs)
	d, mo := a, b
	switch {
	case a > 12 || dotted: // 15/12 is day first whatever the locale; dotted dates always are
	case b > 12 || r.Order == MDY:
		d, mo = b, a
	}
	if len(ys) == 2 {
		ys = "20" + ys
	}
	return monthDay(day, time.Month(mo), d, ys)
}

func relative(phrase, n, unit string, day time.Time) (time.Time, bool) {
	switch {
	case phrase == "tomorrow" || phrase == "tmrw":
		return day.AddDate(0, 0, 1), true
	case strings.HasSuffix(phrase, "day after tomorrow"):
		return day.AddDate(0, 0, 2), true
	case phrase == "next week":
		return weekStart(day).AddDate(0, 0, 7), true
	case phrase == "next month":
		return time.Date(day.Year(), day.Month()+1, 1, 0, 0, 0, 0, day.Location()), true
	case phrase == "this weekend":
		if day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
			return day, true
		}
		return weekday(day, time.Saturday, false), true
	case strings.HasSuffix(phrase, "week"): // end of (the) week: the working week's Friday
		if day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
			return weekStart(day).AddDate(0, 0, 6), true
		}
		return weekStart(day).AddDate(0, 0, 4), true
	case strings.HasSuffix(phrase, "month"): // end of (the) month
		return time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, day.Location()), true
	case strings.HasPrefix(phrase, "in "):
		k, ok := smallNumbers[strings.ToLower(n)]
		if !ok {
			var err error
			if k, err = strconv.Atoi(n); err != nil || k > 400 {
				return time.Time{}, false
			}
		}
		switch strings.TrimSuffix(strings.ToLower(unit), "s") {
		case "day":
			return day.AddDate(0, 0, k), true
		case "week":
			return day.AddDate(0, 0, 7*k), true
		case "month":
			return day.AddDate(0, k, 0), true
		}
	}
	return time.Time{}, false
}

// weekday is the next wd after day (today when day is one: "dentist Friday"
// written on a Friday means today). "next Friday" skips the one still in
// this week: written on a Monday, it is the Friday of the week after.
func weekday(day time.Time, wd time.Weekday, next bool) time.Time {
	ahead := (int(wd) - int(day.Weekday()) + 7) % 7
	t := day.AddDate(0, 0, ahead)
	if next && (ahead == 0 || weekStart(t).Equal(weekStart(day))) {
		t = t.AddDate(0, 0, 7)
	}
	return t
}

// weekStart is the Monday of day's ISO week.
func weekStart(day time.Time) time.Time {
	back := (int(day.Weekday()) + 6) % 7
	return day.AddDate(0, 0, -back)
}

func clockOf(line string, ix []int) (h, m int, ok bool) {
	switch {
	case ix[2] >= 0:
		h, _ = strconv.Atoi(line[ix[2]:ix[3]])
		m, _ = strconv.Atoi(line[ix[4]:ix[5]])
		if ap := strings.ToLower(group(line, ix, 3)); ap != "" {
			if h > 12 {
				return 0, 0, false
			}
			h = h % 12
			if ap == "pm" {
				h += 12
			}
		}
	case ix[8] >= 0:
		h, _ = strconv.Atoi(line[ix[8]:ix[9]])
		h = h % 12
		if strings.EqualFold(line[ix[10]:ix[11]], "pm") {
			h += 12
		}
	default:
		h = 12
	}
	return h, m, true
}

func midnight(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}
