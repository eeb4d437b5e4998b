package predictor

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/memory"
)

type histEntry struct {
	at   time.Time
	role string
	text string
}

// history builds HISTORY.md lines in local time of loc.
type history struct {
	loc     *time.Location
	entries []histEntry
	seed    uint32
}

func newHistory(loc *time.Location) *history { return &history{loc: loc, seed: 12345} }

func (h *history) at(y int, m time.Month, d, hh, mm int, role, text string) {
	h.entries = append(h.entries, histEntry{time.Date(y, m, d, hh, mm, 0, 0, h.loc), role, text})
}

// every adds text at hh:mm (plus a per-day jitter of up to ±jitter minutes)
// on each day in [from, to) whose weekday passes keep.
func (h *history) every(from, to time.Time, hh, mm, jitter int, keep func(time.Weekday) bool, texts ...string) {
	i := 0
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		if !keep(d.Weekday()) {
			continue
		}
		j := 0
		if jitter > 0 {
			j = int(h.rand()%uint32(2*jitter+1)) - jitter
		}
		t := time.Date(d.Year(), d.Month(), d.Day(), hh, mm, 0, 0, h.loc).Add(time.Duration(j) * time.Minute)
		h.entries = append(h.entries, histEntry{t, "user", texts[i%len(texts)]})
		i++
	}
}

var vocab = strings.Fields(`invoice parcel budget novel recipe tomato bicycle insurance laptop printer garden
	python kernel webinar podcast mortgage carpet plumber guitar concert museum passport visa ticket hotel
	airport lasagna spreadsheet slides keynote refactor database backup router firmware vacuum blender
	sneakers jacket umbrella weather forecast election stocks crypto banana avocado espresso chess puzzle
	crossword netflix documentary painting sketch pottery bakery croissant`)

func (h *history) rand() uint32 {
	h.seed = h.seed*1664525 + 1013904223
	return h.seed >> 8
}

// noise adds n messages a day at pseudo-random times 08:00–22:00 with
// random vocabulary, plus the assistant's replies.
func (h *history) noise(from, to time.Time, n int) {
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		for range n {
			min := 8*60 + int(h.rand()%(14*60))
			words := make([]string, 4)
			for i := range words {
				words[i] = vocab[h.rand()%uint32(len(vocab))]
			}
			t := time.Date(d.Year(), d.Month(), d.Day(), min/60, min%60, 0, 0, h.loc)
			h.entries = append(h.entries, histEntry{t, "user", "what about the " + strings.Join(words, " ") + "?"})
			h.entries = append(h.entries, histEntry{t.Add(time.Minute), "assistant", "Here is what I found on " + words[0]})
		}
	}
}

func (h *history) String() string {
	slices.SortStableFunc(h.entries, func(a, b histEntry) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, e := range h.entries {
		fmt.Fprintf(&b, "- %s [cli:direct] %s: %s\n", e.at.UTC().Format(time.RFC3339), e.role, e.text)
	}
	return b.String()
}

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no tzdata for %s: %v", name, err)
	}
	return loc
}

func is(days ...time.Weekday) func(time.Weekday) bool {
	return func(d time.Weekday) bool { return slices.Contains(days, d) }
}

func weekday(d time.Weekday) bool { return d != time.Saturday && d != time.Sunday }
func anyDay(time.Weekday) bool    { return true }

func TestLearn(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	ny := mustLoc(t, "America/New_York")
	tokyo := mustLoc(t, "Asia/Tokyo")
	from := func(loc *time.Location) time.Time { return time.Date(2026, 10, 5, 0, 0, 0, 0, loc) } // a Monday
	now := func(loc *time.Location) time.Time { return time.Date(2026, 12, 4, 12, 0, 0, 0, loc) } // a Friday

	type want struct {
		when     string
		cadence  Cadence
		keyword  string
		minConf  float64
		keywords []string // all of them, when set
	}
	tests := []struct {
		name    string
		loc     *time.Location // the owner's zone, where the history was lived
		learnIn *time.Location // the zone Learn is given (default loc)
		build   func(h *history, from, now time.Time)
		want    []want // in order; nil: no routine
	}{
		{
			name: "weekly gym on Thursdays",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 17, 0, 20, is(time.Thursday), "heading to the gym", "gym time, leg day", "at the gym now, remind me to stretch")
			},
			want: []want{{when: "Thursdays ~17:00", cadence: CadenceWeekly, keyword: "gym", minConf: 0.9}},
		},
		{
			name: "weekday standup",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 9, 30, 10, weekday, "standup notes: reviewed the backlog", "standup in five", "standup done")
			},
			want: []want{{when: "weekdays ~09:30", cadence: CadenceWeekdays, keyword: "standup", minConf: 0.9}},
		},
		{
			name: "daily dog walk, two words merged",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 7, 0, 15, anyDay, "walking the dog", "dog walk done", "back from the dog walk")
			},
			want: []want{{when: "daily ~07:00", cadence: CadenceDaily, keyword: "dog", minConf: 0.9, keywords: []string{"dog", "walk"}}},
		},
		{
			name: "gym twice a week",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 18, 0, 10, is(time.Monday, time.Thursday), "gym", "off to the gym")
			},
			want: []want{{when: "Mon, Thu ~18:00", cadence: CadenceWeekly, keyword: "gym", minConf: 0.9}},
		},
		{
			name: "weekly and daily together",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 17, 0, 20, is(time.Thursday), "climbing session tonight")
				h.every(from, now, 9, 30, 10, weekday, "standup")
			},
			want: []want{
				{when: "weekdays ~09:30", cadence: CadenceWeekdays, keyword: "standup", minConf: 0.9},
				{when: "Thursdays ~17:00", cadence: CadenceWeekly, keyword: "climbing", minConf: 0.9},
			},
		},
		{
			name: "DST: wall-clock time holds across the change",
			loc:  ny,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 17, 0, 0, is(time.Thursday), "yoga class")
			},
			want: []want{{when: "Thursdays ~17:00", cadence: CadenceWeekly, keyword: "yoga", minConf: 0.9}},
		},
		{
			name:    "zone decides the weekday: Friday 08:00 in Tokyo",
			loc:     tokyo,
			learnIn: tokyo,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 8, 0, 0, is(time.Friday), "swimming lesson")
			},
			want: []want{{when: "Fridays ~08:00", cadence: CadenceWeekly, keyword: "swimming", minConf: 0.9}},
		},
		{
			name:    "same history read in UTC is Thursday night",
			loc:     tokyo,
			learnIn: time.UTC,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, now, 8, 0, 0, is(time.Friday), "swimming lesson")
			},
			want: []want{{when: "Thursdays ~23:00", cadence: CadenceWeekly, keyword: "swimming", minConf: 0.8}},
		},
		{
			name:  "noise only",
			loc:   berlin,
			build: func(h *history, from, now time.Time) { h.noise(from, now, 5) },
		},
		{
			name: "one-day burst",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				for i := range 6 {
					h.at(2026, 11, 19, 17, i*5, "user", "gym gym gym")
				}
			},
		},
		{
			name: "same weekday, scattered hours",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				for i, d := range []int{5, 12, 19, 26} {
					h.at(2026, 11, d, 8+4*i, 0, "user", "dentist appointment")
				}
			},
		},
		{
			name: "a word said all day every day is no routine",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.every(from, now, 8, 0, 0, anyDay, coffee(0)...)
				h.every(from, now, 13, 0, 0, anyDay, coffee(2)...)
				h.every(from, now, 20, 0, 0, anyDay, coffee(4)...)
			},
		},
		{
			name: "stopped routine goes stale",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.every(from, from.AddDate(0, 0, 35), 17, 0, 10, is(time.Thursday), "tennis match")
			},
		},
		{
			name: "only the owner's lines count",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				for d := from; d.Before(now); d = d.AddDate(0, 0, 1) {
					if d.Weekday() == time.Thursday {
						at := time.Date(d.Year(), d.Month(), d.Day(), 17, 0, 0, 0, h.loc)
						h.entries = append(h.entries, histEntry{at, "assistant", "Enjoy the gym!"}, histEntry{at, "cron", "gym reminder"})
					}
				}
			},
		},
		{
			name: "too few weeks",
			loc:  berlin,
			build: func(h *history, from, now time.Time) {
				h.noise(from, now, 3)
				h.at(2026, 11, 26, 17, 0, "user", "pottery class")
				h.at(2026, 12, 3, 17, 0, "user", "pottery class")
			},
		},
	}
	l := NewRoutineLearner(LearnerOptions{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(tc.loc)
			tc.build(h, from(tc.loc), now(tc.loc))
			in := tc.learnIn
			if in == nil {
				in = tc.loc
			}
			got := l.Learn(h.String(), now(tc.loc), in)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d routines, want %d:\n%s", len(got), len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				r := got[i]
				if r.When != w.when || r.Cadence != w.cadence || !slices.Contains(r.Keywords, w.keyword) || r.Confidence < w.minConf {
					t.Errorf("routine %d = %s\nwant when=%q cadence=%s keyword=%q conf>=%.2f", i, dump([]Routine{r}), w.when, w.cadence, w.keyword, w.minConf)
				}
				if w.keywords != nil && !sameSet(r.Keywords, w.keywords) {
					t.Errorf("routine %d keywords = %v, want %v", i, r.Keywords, w.keywords)
				}
				if r.Samples < DefaultMinWeeks || r.LastSeen.IsZero() || r.LastSeen.After(now(tc.loc)) || r.Example == "" || r.Confidence > 1 {
					t.Errorf("routine %d has bad metadata: %s", i, dump([]Routine{r}))
				}
			}
		})
	}
}

// coffee is "coffee" with a different companion word each day.
func coffee(offset int) []string {
	var out []string
	for i := range 9 {
		out = append(out, "coffee and "+vocab[(offset*9+i)%len(vocab)])
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

func dump(rs []Routine) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %q %q %s conf=%.2f samples=%d last=%s ex=%q\n", r.Description, r.When, r.Cadence, r.Confidence, r.Samples, r.LastSeen.Format(time.RFC3339), r.Example)
	}
	return b.String()
}

func TestLearnWeeklyDetails(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	from := time.Date(2026, 10, 5, 0, 0, 0, 0, loc)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, loc)
	h := newHistory(loc)
	h.noise(from, now, 3)
	h.every(from, now, 17, 0, 0, is(time.Thursday), "gym")
	rs := NewRoutineLearner(LearnerOptions{}).Learn(h.String(), now, loc)
	if len(rs) != 1 {
		t.Fatalf("routines:\n%s", dump(rs))
	}
	r := rs[0]
	wantLast := time.Date(2026, 12, 3, 17, 0, 0, 0, loc).UTC()
	if r.Samples != 9 || !r.LastSeen.Equal(wantLast) || r.Minute != 17*60 || !slices.Equal(r.Weekdays, []time.Weekday{time.Thursday}) || r.Confidence != 1 {
		t.Fatalf("routine = %+v, want 9 samples, last %s, minute 1020, Thursday, confidence 1", r, wantLast)
	}
}

func TestLearnTodayWindowNotYetPassed(t *testing.T) {
	// On a Thursday morning, today's 17:00 has not been missed yet.
	loc := time.UTC
	from := time.Date(2026, 10, 5, 0, 0, 0, 0, loc)
	thursdayMorning := time.Date(2026, 12, 3, 9, 0, 0, 0, loc)
	h := newHistory(loc)
	h.noise(from, thursdayMorning, 3)
	h.every(from, thursdayMorning, 17, 0, 0, is(time.Thursday), "gym")
	rs := NewRoutineLearner(LearnerOptions{}).Learn(h.String(), thursdayMorning, loc)
	if len(rs) != 1 || rs[0].Confidence != 1 {
		t.Fatalf("routines:\n%s", dump(rs))
	}
}

func TestLearnBoundsAndDeterminism(t *testing.T) {
	loc := time.UTC
	from := time.Date(2026, 10, 5, 0, 0, 0, 0, loc)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, loc)
	h := newHistory(loc)
	h.noise(from, now, 2)
	acts := []string{"piano", "spanish", "meditation", "journaling", "running", "baking", "reading", "cycling"}
	for i, a := range acts {
		h.every(from, now, 6+2*i, 0, 5, is(time.Weekday(i%7)), a+" session")
	}
	hist := h.String()
	l := NewRoutineLearner(LearnerOptions{MaxRoutines: 4})
	a := l.Learn(hist, now, loc)
	b := l.Learn(hist, now, loc)
	if len(a) != 4 {
		t.Fatalf("got %d routines, want the bound 4:\n%s", len(a), dump(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("not deterministic:\n%s\nvs\n%s", dump(a), dump(b))
	}
	for i := 1; i < len(a); i++ {
		if a[i].Confidence > a[i-1].Confidence {
			t.Fatalf("not strongest first:\n%s", dump(a))
		}
	}
}

func TestLearnEdgeInputs(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	l := NewRoutineLearner(LearnerOptions{})
	for name, in := range map[string]string{
		"empty":                 "",
		"garbage":               "# HISTORY\n\nnot a line\n- nonsense\n- 2026-13-45T99:00:00Z [x] user: gym\n- 2026-11-05T17:00:00Z [x] user",
		"no owner":              "- 2026-11-05T17:00:00Z [cli:direct] assistant: gym\n",
		"future":                strings.Repeat("- 2027-01-07T17:00:00Z [cli:direct] user: gym\n", 10),
		"no tokens":             "- 2026-11-05T17:00:00Z [cli:direct] user: ok 12 !!\n",
		"offset stamp, no conv": "- 2026-11-05T17:00:00+01:00 user: gym\n",
	} {
		if got := l.Learn(in, now, time.UTC); len(got) != 0 {
			t.Errorf("%s: got routines %s", name, dump(got))
		}
	}
	if got := l.Learn("- 2026-11-05T17:00:00Z [cli:direct] user: gym\n", now, nil); len(got) != 0 {
		t.Errorf("nil location: %s", dump(got))
	}
}

// TestLearnReadsAppendHistory pins the line format to the writer's.
func TestLearnReadsAppendHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "HISTORY.md")
	loc := time.UTC
	start := time.Date(2026, 10, 1, 17, 5, 0, 0, loc) // a Thursday
	for w := range 6 {
		at := start.AddDate(0, 0, 7*w)
		if err := memory.AppendHistory(path, at, "telegram:42", "user", "going to the gym\nthen dinner"); err != nil {
			t.Fatal(err)
		}
		if err := memory.AppendHistory(path, at.Add(time.Minute), "telegram:42", "assistant", "have fun at the gym"); err != nil {
			t.Fatal(err)
		}
		for d := range 7 {
			if err := memory.AppendHistory(path, at.AddDate(0, 0, d).Add(-8*time.Hour), "telegram:42", "user", fmt.Sprintf("topic%d", w*7+d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rs := NewRoutineLearner(LearnerOptions{}).Learn(string(b), start.AddDate(0, 0, 40), loc)
	if len(rs) != 1 || rs[0].When != "Thursdays ~17:00" || !slices.Contains(rs[0].Keywords, "gym") {
		t.Fatalf("routines:\n%s", dump(rs))
	}
}

func TestTokenizer(t *testing.T) {
	tok := newTokenizer()
	var got []string
	tok.each("Heading to the GYM—then Café au lait; don't forget 2026 leg-day!! It's ok", func(id int32) { got = append(got, tok.names[id]) })
	want := []string{"heading", "gym", "café", "lait", "forget", "leg"}
	if !slices.Equal(got, want) {
		t.Fatalf("tokens = %q, want %q", got, want)
	}
}

func TestDayArithmetic(t *testing.T) {
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		n := dayNumber(d.Date())
		if int64(n) != d.Unix()/86400 && !(d.Year() == 1969 && n == -1) {
			t.Errorf("dayNumber(%s) = %d, want %d", d.Format(time.DateOnly), n, d.Unix()/86400)
		}
		if weekdayOf(n) != int(d.Weekday()) {
			t.Errorf("weekdayOf(%s) = %d, want %d", d.Format(time.DateOnly), weekdayOf(n), d.Weekday())
		}
	}
	mon := dayNumber(2026, 11, 30)
	if got := countDays(weekdayMask, mon, mon+13); got != 10 {
		t.Errorf("weekdays in two weeks = %d", got)
	}
	if got := countDays(1<<time.Thursday, mon, mon+2); got != 0 {
		t.Errorf("Thursdays Mon..Wed = %d", got)
	}
	if got := countDays(allDays, mon+1, mon); got != 0 {
		t.Errorf("empty range = %d", got)
	}
}

// benchHistory is about size bytes of realistic history: noise plus a few
// routines.
func benchHistory(size int) (string, time.Time) {
	loc := time.UTC
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, loc)
	h := newHistory(loc)
	from := now.AddDate(0, 0, -7)
	for {
		h.entries = h.entries[:0]
		h.noise(from, now, 4)
		h.every(from, now, 17, 0, 20, is(time.Thursday), "heading to the gym")
		h.every(from, now, 9, 30, 10, weekday, "standup notes")
		if s := h.String(); len(s) >= size {
			return s[len(s)-size:][strings.IndexByte(s[len(s)-size:], '\n')+1:], now
		}
		from = from.AddDate(0, 0, -7)
	}
}

func BenchmarkLearn(b *testing.B) {
	for _, size := range []int{16 << 10, 64 << 10, 256 << 10} {
		hist, now := benchHistory(size)
		l := NewRoutineLearner(LearnerOptions{})
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(hist)))
			b.ReportAllocs()
			for b.Loop() {
				l.Learn(hist, now, time.UTC)
			}
		})
	}
}
