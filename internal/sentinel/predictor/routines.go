// Package predictor learns about the owner from what they already said: the
// RoutineLearner (recurring patterns in HISTORY.md) and the BehaviorsExtractor.
package predictor

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Cadence is how often a routine recurs.
type Cadence string

const (
	// CadenceWeekly: on the same weekday(s) every week.
	CadenceWeekly Cadence = "weekly"
	// CadenceWeekdays: Monday to Friday, not at weekends.
	CadenceWeekdays Cadence = "weekdays"
	// CadenceDaily: every day of the week.
	CadenceDaily Cadence = "daily"
)

// Routine is a recurring pattern in the owner's messages: the same subject
// brought up at a similar local time on the same weekday(s) or every day.
type Routine struct {
	// Description names the activity by its salient keywords ("gym, workout").
	Description string `json:"description"`
	// When is human-readable: "Thursdays ~17:00", "Mon, Thu ~18:00",
	// "weekdays ~09:30", "daily ~07:00".
	When     string         `json:"when"`
	Cadence  Cadence        `json:"cadence"`
	Weekdays []time.Weekday `json:"weekdays,omitempty"` // set for CadenceWeekly
	// Minute is the typical local minute of the day (0..1439).
	Minute   int      `json:"minute"`
	Keywords []string `json:"keywords"`
	// Example is the most recent owner message of the pattern, shortened.
	Example string `json:"example,omitempty"`
	// Confidence in [0,1]: how many of the opportunities in the observed
	// span the pattern took, weighted by how concentrated its subject is in
	// the pattern's window.
	Confidence float64   `json:"confidence"`
	LastSeen   time.Time `json:"last_seen"`
	// Samples is the number of distinct days the pattern was seen on (for a
	// weekly routine, distinct weeks per weekday).
	Samples int `json:"samples"`
}

// LearnerOptions tune the RoutineLearner. Zero values take the defaults.
type LearnerOptions struct {
	// MinWeeks a weekly pattern must be seen in (default 3).
	MinWeeks int
	// MinDays a daily or weekdays pattern must be seen on (default 5).
	MinDays int
	// Window is the width of the "similar time" window (default 90m).
	Window time.Duration
	// MinCoverage is the least share of opportunities in the observed span
	// the pattern must have taken (default 0.5).
	MinCoverage float64
	// MinConcentration is the least share of the subject's mentions that
	// fall in the pattern (default 0.4): "gym" said all week is not a
	// Thursday routine.
	MinConcentration float64
	// MinLift is how much more often the subject is mentioned in the window
	// than chat in general is (default 2): words of someone who only
	// chats at 09:00 are not all 09:00 routines.
	MinLift float64
	// MaxRoutines returned (default 5); MaxKeywords per routine (default 3).
	MaxRoutines int
	MaxKeywords int
	// StaleWeeks / StaleDays: a weekly pattern missed this many weeks in a
	// row (default 3), or a daily one missed this many days (default 5),
	// has stopped.
	StaleWeeks int
	StaleDays  int
	// MaxAge: older messages are ignored (default 182 days), which also
	// bounds the work on a long history.
	MaxAge time.Duration
}

// Learner defaults.
const (
	DefaultMinWeeks         = 3
	DefaultMinDays          = 5
	DefaultWindow           = 90 * time.Minute
	DefaultMinCoverage      = 0.5
	DefaultMinConcentration = 0.4
	DefaultMinLift          = 2.0
	DefaultMaxRoutines      = 5
	DefaultMaxKeywords      = 3
	DefaultStaleWeeks       = 3
	DefaultStaleDays        = 5
	DefaultMaxAge           = 182 * 24 * time.Hour

	exampleMax = 80
)

// RoutineLearner finds routines in HISTORY.md lines. It is a pure
// algorithm: no model, no disk, deterministic for a given input.
type RoutineLearner struct {
	o      LearnerOptions
	window int // minutes
}

// NewRoutineLearner returns a learner with o's thresholds.
func NewRoutineLearner(o LearnerOptions) *RoutineLearner {
	if o.MinWeeks <= 0 {
		o.MinWeeks = DefaultMinWeeks
	}
	if o.MinDays <= 0 {
		o.MinDays = DefaultMinDays
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MinCoverage <= 0 {
		o.MinCoverage = DefaultMinCoverage
	}
	if o.MinConcentration <= 0 {
		o.MinConcentration = DefaultMinConcentration
	}
	if o.MinLift <= 0 {
		o.MinLift = DefaultMinLift
	}
	if o.MaxRoutines <= 0 {
		o.MaxRoutines = DefaultMaxRoutines
	}
	if o.MaxKeywords <= 0 {
		o.MaxKeywords = DefaultMaxKeywords
	}
	if o.StaleWeeks <= 0 {
		o.StaleWeeks = DefaultStaleWeeks
	}
	if o.StaleDays <= 0 {
		o.StaleDays = DefaultStaleDays
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	w := int(o.Window / time.Minute)
	return &RoutineLearner{o: o, window: min(max(w, 1), 24*60)}
}

// event is one owner message of the history.
type event struct {
	unix   int64
	day    int32 // local calendar day number
	minute int16 // local minute of the day
	wd     int8  // local weekday
	text   string
}

// corpus is a parsed history: owner messages in file order, each salient
// word's mentions, and per-weekday minute histograms for lift.
type corpus struct {
	events   []event
	names    []string
	mentions [][]int32      // word id -> event indexes (one per event)
	prefix   [7][1441]int32 // prefix[wd][m] = owner messages on wd before minute m
	firstDay int32
	today    int32
	nowMin   int
}

// Learn returns at most MaxRoutines routines found in history (lines in
// memory.AppendHistory's format; other lines are ignored), strongest first.
// Only the owner's own messages count. Times are read in loc (nil: the
// local zone) so a routine keeps its wall-clock time across DST changes;
// messages after now are ignored.
func (l *RoutineLearner) Learn(history string, now time.Time, loc *time.Location) []Routine {
	if loc == nil {
		loc = time.Local
	}
	c := parseHistory(history, now, loc, int32(l.o.MaxAge/(24*time.Hour)))
	if c == nil {
		return nil
	}
	cands := l.candidates(c)
	return l.merge(c, cands)
}

// parseHistory reads the owner's messages; nil when there are none.
func parseHistory(history string, now time.Time, loc *time.Location, maxAgeDays int32) *corpus {
	c := &corpus{}
	tok := newTokenizer()
	lastEvent := []int32{}
	nowUnix := now.Unix()
	ln := now.In(loc)
	c.today = dayNumber(ln.Date())
	c.nowMin = ln.Hour()*60 + ln.Minute()
	for len(history) > 0 {
		line := history
		if i := strings.IndexByte(history, '\n'); i >= 0 {
			line, history = history[:i], history[i+1:]
		} else {
			history = ""
		}
		at, text, ok := parseLine(line)
		if !ok || at.Unix() > nowUnix {
			continue
		}
		lt := at.In(loc)
		day := dayNumber(lt.Date())
		if day < c.today-maxAgeDays {
			continue
		}
		h, m, _ := lt.Clock()
		ev := event{unix: at.Unix(), day: day, minute: int16(h*60 + m), wd: int8(lt.Weekday()), text: text}
		idx := int32(len(c.events))
		c.events = append(c.events, ev)
		tok.each(text, func(id int32) {
			for int(id) >= len(c.mentions) {
				c.mentions = append(c.mentions, nil)
				lastEvent = append(lastEvent, -1)
			}
			if lastEvent[id] == idx {
				return // one mention per message
			}
			lastEvent[id] = idx
			c.mentions[id] = append(c.mentions[id], idx)
		})
	}
	if len(c.events) == 0 {
		return nil
	}
	c.names = tok.names
	c.firstDay = c.events[0].day
	for _, e := range c.events {
		c.firstDay = min(c.firstDay, e.day)
		c.prefix[e.wd][e.minute+1]++
	}
	for wd := range c.prefix {
		for m := 1; m <= 1440; m++ {
			c.prefix[wd][m] += c.prefix[wd][m-1]
		}
	}
	return c
}

// parseLine splits "- <RFC3339> [conversation] role: text" and keeps only
// the owner's messages (role user, or answer for an owner question).
func parseLine(line string) (time.Time, string, bool) {
	rest, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return time.Time{}, "", false
	}
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		return time.Time{}, "", false
	}
	at, ok := parseStamp(rest[:sp])
	if !ok {
		return time.Time{}, "", false
	}
	rest = rest[sp+1:]
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return time.Time{}, "", false
		}
		rest = strings.TrimPrefix(rest[end+1:], " ")
	}
	role, text, ok := strings.Cut(rest, ": ")
	if !ok || (role != "user" && role != "answer") {
		return time.Time{}, "", false
	}
	return at, text, true
}

// parseStamp reads the fixed "2006-01-02T15:04:05Z" AppendHistory writes
// without time.Parse, falling back to RFC 3339 for hand-edited lines.
func parseStamp(s string) (time.Time, bool) {
	if len(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == 'Z' {
		y, ok1 := digits(s[0:4])
		mo, ok2 := digits(s[5:7])
		d, ok3 := digits(s[8:10])
		h, ok4 := digits(s[11:13])
		mi, ok5 := digits(s[14:16])
		se, ok6 := digits(s[17:19])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && se < 61 {
			return time.Date(y, time.Month(mo), d, h, mi, se, 0, time.UTC), true
		}
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// dayNumber is the proleptic Gregorian day count since 1970-01-01 of a
// calendar date: days, not 24h periods, so DST days count once.
func dayNumber(y int, m time.Month, d int) int32 {
	yy := y
	if m <= 2 {
		yy--
	}
	era := yy / 400
	if yy < 0 && yy%400 != 0 {
		era--
	}
	yoe := yy - era*400
	mp := (int(m) + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}

// weekdayOf is the weekday of a day number (1970-01-01 was a Thursday).
func weekdayOf(day int32) int {
	return int(((day+4)%7 + 7) % 7)
}

const (
	allDays     uint8 = 0x7f
	weekdayMask uint8 = 0x3e // Monday..Friday
)

// countDays counts the days in [from, to] whose weekday is in mask.
func countDays(mask uint8, from, to int32) int {
	if to < from {
		return 0
	}
	n := 0
	for wd := range 7 {
		if mask&(1<<wd) == 0 {
			continue
		}
		first := from + int32((wd-weekdayOf(from)+7)%7)
		if first <= to {
			n += int((to-first)/7) + 1
		}
	}
	return n
}

// candidate is one keyword's pattern before keywords are merged.
type candidate struct {
	kw      int32
	cadence Cadence
	mask    uint8
	lo, hi  int // window, minutes [lo, hi]
	center  int
	days    []int32 // distinct local days, sorted
	samples int
	last    int32 // event index of the latest message in the pattern
	conf    float64
}

// candidates finds, for every word mentioned on enough days, its strongest
// daily pattern or else its weekly ones.
func (l *RoutineLearner) candidates(c *corpus) []candidate {
	minSupport := min(l.o.MinWeeks, l.o.MinDays)
	var out []candidate
	var sorted []int32
	var byWeekday [7][]int32
	dayCount := make([]int32, c.today-c.firstDay+1)
	for kw, evs := range c.mentions {
		if len(evs) < minSupport || distinctDays(c, evs) < minSupport {
			continue
		}
		sorted = append(sorted[:0], evs...)
		slices.SortFunc(sorted, func(a, b int32) int {
			if d := int(c.events[a].minute) - int(c.events[b].minute); d != 0 {
				return d
			}
			return int(a - b)
		})

		daily, ok := l.dailyPattern(c, int32(kw), sorted, dayCount)
		if ok {
			out = append(out, daily)
		}
		for wd := range byWeekday {
			byWeekday[wd] = byWeekday[wd][:0]
		}
		for _, e := range sorted {
			wd := c.events[e].wd
			byWeekday[wd] = append(byWeekday[wd], e)
		}
		var weekly []candidate
		for wd, sub := range byWeekday {
			if len(sub) < l.o.MinWeeks {
				continue
			}
			cand, ok := l.windowOf(c, int32(kw), sub, dayCount)
			if !ok || len(cand.days) < l.o.MinWeeks {
				continue
			}
			if daily.samples > 0 && abs(cand.center-daily.center) <= l.window {
				continue // the daily pattern already covers it
			}
			cand.cadence, cand.mask = CadenceWeekly, 1<<wd
			weekly = append(weekly, cand)
		}
		for _, w := range mergeWeekdays(weekly, l.window/2) {
			if l.score(c, &w, len(evs)) {
				out = append(out, w)
			}
		}
	}
	return out
}

// dailyPattern is the word's densest window across all days, accepted as a
// daily or weekdays routine.
func (l *RoutineLearner) dailyPattern(c *corpus, kw int32, sorted []int32, dayCount []int32) (candidate, bool) {
	cand, ok := l.windowOf(c, kw, sorted, dayCount)
	if !ok || len(cand.days) < l.o.MinDays {
		return candidate{}, false
	}
	var seen uint8
	for _, d := range cand.days {
		seen |= 1 << weekdayOf(d)
	}
	if popcount(seen) < 3 {
		return candidate{}, false // one or two weekdays: weekly, not daily
	}
	cand.cadence, cand.mask = CadenceDaily, allDays
	if seen&^weekdayMask == 0 && countDays(^weekdayMask&allDays, c.firstDay, c.today) > 0 {
		cand.cadence, cand.mask = CadenceWeekdays, weekdayMask
	}
	if !l.score(c, &cand, len(c.mentions[kw])) {
		return candidate{}, false
	}
	return cand, true
}

// windowOf finds the window of the configured width holding the most
// distinct days among evs (sorted by minute); ties go to the earliest.
// dayCount is scratch indexed by day-firstDay, all zero on entry and exit.
func (l *RoutineLearner) windowOf(c *corpus, kw int32, evs []int32, dayCount []int32) (candidate, bool) {
	if len(evs) == 0 {
		return candidate{}, false
	}
	best, bi, bj := 0, 0, 0
	distinct, j := 0, 0
	for i := range evs {
		lo := int(c.events[evs[i]].minute)
		for j < len(evs) && int(c.events[evs[j]].minute) < lo+l.window {
			d := c.events[evs[j]].day - c.firstDay
			if dayCount[d]++; dayCount[d] == 1 {
				distinct++
			}
			j++
		}
		if distinct > best {
			best, bi, bj = distinct, i, j
		}
		d := c.events[evs[i]].day - c.firstDay
		if dayCount[d]--; dayCount[d] == 0 {
			distinct--
		}
	}
	win := evs[bi:bj]
	cand := candidate{kw: kw, lo: int(c.events[win[0]].minute), hi: int(c.events[win[len(win)-1]].minute), last: win[0]}
	cand.center = int(c.events[win[len(win)/2]].minute)
	days := make([]int32, 0, len(win))
	for _, e := range win {
		days = append(days, c.events[e].day)
		if c.events[e].unix > c.events[cand.last].unix || (c.events[e].unix == c.events[cand.last].unix && e > cand.last) {
			cand.last = e
		}
	}
	slices.Sort(days)
	cand.days = slices.Compact(days)
	cand.samples = len(cand.days)
	return cand, true
}

// mergeWeekdays joins one word's weekly patterns at about the same time on
// different weekdays ("Mon, Thu ~18:00").
func mergeWeekdays(ws []candidate, tolerance int) []candidate {
	slices.SortStableFunc(ws, func(a, b candidate) int { return a.center - b.center })
	var out []candidate
	for _, w := range ws {
		if n := len(out); n > 0 && abs(w.center-out[n-1].center) <= tolerance {
			m := &out[n-1]
			m.center = (m.center*m.samples + w.center*w.samples) / (m.samples + w.samples)
			m.samples += w.samples
			m.mask |= w.mask
			m.lo, m.hi = min(m.lo, w.lo), max(m.hi, w.hi)
			m.days = slices.Compact(slices.Sorted(slices.Values(append(slices.Clip(m.days), w.days...))))
			if w.last > m.last {
				m.last = w.last
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// score checks coverage, staleness, concentration and lift, and sets the
// confidence. Opportunities run from the first day of the history to the
// last day whose window has passed.
func (l *RoutineLearner) score(c *corpus, cand *candidate, mentions int) bool {
	end := c.today
	if c.nowMin <= cand.hi {
		end-- // today's window is still ahead
	}
	hits := len(cand.days)
	opps := max(countDays(cand.mask, c.firstDay, end), hits)
	coverage := float64(hits) / float64(opps)
	if coverage < l.o.MinCoverage {
		return false
	}
	lastDay := cand.days[len(cand.days)-1]
	stale := l.o.StaleDays
	if cand.cadence == CadenceWeekly {
		stale = l.o.StaleWeeks * popcount(cand.mask)
	}
	if countDays(cand.mask, lastDay+1, end) >= stale {
		return false
	}
	in, cluster, total := 0, 0, len(c.events)
	for _, e := range c.mentions[cand.kw] {
		ev := c.events[e]
		if cand.mask&(1<<ev.wd) != 0 && int(ev.minute) >= cand.lo && int(ev.minute) <= cand.hi {
			in++
		}
	}
	for wd := range 7 {
		if cand.mask&(1<<wd) != 0 {
			cluster += int(c.prefix[wd][cand.hi+1] - c.prefix[wd][cand.lo])
		}
	}
	concentration := float64(in) / float64(mentions)
	if concentration < l.o.MinConcentration || cluster == 0 {
		return false
	}
	if lift := concentration / (float64(cluster) / float64(total)); lift < l.o.MinLift {
		return false
	}
	cand.conf = math.Round(coverage*(0.5+0.5*concentration)*100) / 100
	return true
}

// merge folds candidates describing the same pattern under different words
// ("gym", "workout") into one routine and keeps the strongest.
func (l *RoutineLearner) merge(c *corpus, cands []candidate) []Routine {
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.conf != b.conf:
			if a.conf > b.conf {
				return -1
			}
			return 1
		case a.samples != b.samples:
			return b.samples - a.samples
		}
		return strings.Compare(c.names[a.kw], c.names[b.kw])
	})
	type group struct {
		head candidate
		kws  []string
	}
	var groups []group
next:
	for _, cand := range cands {
		for i := range groups {
			g := &groups[i]
			if g.head.cadence == cand.cadence && g.head.mask == cand.mask && abs(g.head.center-cand.center) <= l.window/2 &&
				overlap(g.head.days, cand.days)*2 >= min(len(g.head.days), len(cand.days)) {
				if len(g.kws) < l.o.MaxKeywords {
					g.kws = append(g.kws, c.names[cand.kw])
				}
				continue next
			}
		}
		if len(groups) < l.o.MaxRoutines {
			groups = append(groups, group{head: cand, kws: []string{c.names[cand.kw]}})
		}
	}
	out := make([]Routine, 0, len(groups))
	for _, g := range groups {
		h := g.head
		center := (h.center + 7) / 15 * 15 % (24 * 60)
		r := Routine{
			Description: strings.Join(g.kws, ", "),
			Cadence:     h.cadence,
			Minute:      center,
			Keywords:    g.kws,
			Example:     shorten(c.events[h.last].text, exampleMax),
			Confidence:  h.conf,
			LastSeen:    time.Unix(c.events[h.last].unix, 0).UTC(),
			Samples:     h.samples,
		}
		clock := "~" + twoDigits(center/60) + ":" + twoDigits(center%60)
		switch h.cadence {
		case CadenceDaily:
			r.When = "daily " + clock
		case CadenceWeekdays:
			r.When = "weekdays " + clock
		default:
			var names []string
			for wd := range 7 {
				if h.mask&(1<<wd) != 0 {
					r.Weekdays = append(r.Weekdays, time.Weekday(wd))
					names = append(names, time.Weekday(wd).String()[:3])
				}
			}
			if len(r.Weekdays) == 1 {
				r.When = r.Weekdays[0].String() + "s " + clock
			} else {
				r.When = strings.Join(names, ", ") + " " + clock
			}
		}
		out = append(out, r)
	}
	return out
}

func distinctDays(c *corpus, evs []int32) int {
	n := 0
	last := int32(math.MinInt32)
	for _, e := range evs {
		if d := c.events[e].day; d != last {
			n++
			last = d
		}
	}
	return n
}

func overlap(a, b []int32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

func popcount(m uint8) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func twoDigits(n int) string {
	return string([]byte{byte('0' + n/10), byte('0' + n%10)})
}

// shorten collapses whitespace and cuts s to at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
