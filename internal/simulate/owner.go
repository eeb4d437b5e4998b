package simulate

import (
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// Reactions the owner can have to a nudge.
const (
	ReactAccept  = "accept"
	ReactDismiss = "dismiss"
	ReactIgnore  = "ignore"
)

// timeline places the scenario's local times on the absolute clock, with
// the time zone in effect at each moment (the owner may travel).
type timeline struct {
	start time.Time // midnight of day 0 in the first zone
	zones []zoneSpan
}

type zoneSpan struct {
	from time.Time
	loc  *time.Location
}

func newTimeline(sc Scenario) (*timeline, error) {
	loc, err := time.LoadLocation(sc.Timezone)
	if err != nil {
		return nil, err
	}
	day, _ := time.ParseInLocation(time.DateOnly, sc.Start, loc)
	tl := &timeline{start: day, zones: []zoneSpan{{from: time.Time{}, loc: loc}}}
	travels := append([]Travel(nil), sc.Travel...)
	sort.SliceStable(travels, func(i, j int) bool {
		return travels[i].Day < travels[j].Day || (travels[i].Day == travels[j].Day && travels[i].At < travels[j].At)
	})
	for _, t := range travels {
		to, err := time.LoadLocation(t.Timezone)
		if err != nil {
			return nil, err
		}
		at := tl.at(t.Day, t.At)
		tl.zones = append(tl.zones, zoneSpan{from: at, loc: to})
	}
	return tl, nil
}

// zone is the owner's time zone at t.
func (tl *timeline) zone(t time.Time) *time.Location {
	loc := tl.zones[0].loc
	for _, z := range tl.zones[1:] {
		if !t.Before(z.from) {
			loc = z.loc
		}
	}
	return loc
}

// at is day's local hh:mm in the zone the owner is in then: the zone
// whose span contains that moment. A local time a flight east skipped
// (it never happened on the owner's watch) is the moment of the change.
func (tl *timeline) at(day int, hhmm string) time.Time {
	tod, _ := policy.ParseTimeOfDay(hhmm)
	d := tl.start.AddDate(0, 0, day)
	for i, z := range tl.zones {
		t := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, z.loc).Add(time.Duration(tod) * time.Minute)
		if t.Before(z.from) {
			return z.from // skipped by the change into this zone
		}
		if i == len(tl.zones)-1 || t.Before(tl.zones[i+1].from) {
			return t
		}
	}
	return d
}

// inWindow reports whether t (local) falls in [from, to) on one of days.
func inWindow(t time.Time, days []time.Weekday, from, to string) bool {
	f, _ := policy.ParseTimeOfDay(from)
	e, _ := policy.ParseTimeOfDay(to)
	return policy.DayWindow{Start: f, End: e, Days: days}.Contains(t)
}

// owner is the simulated person's behaviour.
type owner struct {
	sc  Owner
	tl  *timeline
	rng *rand.Rand
}

// attachedAt is the surface the owner has open at t ("" when none).
func (o *owner) attachedAt(t time.Time) string {
	local := t.In(o.tl.zone(t))
	for _, w := range o.sc.Attached {
		days, _ := parseWeekdays(w.Days)
		if inWindow(local, days, w.From, w.To) {
			return cmpOr(w.Surface, "cli")
		}
	}
	return ""
}

// react draws the owner's reaction to a nudge on topic with message,
// seen at t.
func (o *owner) react(t time.Time, topic, message string) string {
	odds := o.odds(t, topic, message)
	sum := odds.Accept + odds.Dismiss + odds.Ignore
	if sum <= 0 {
		return ReactIgnore
	}
	x := o.rng.Float64() * sum
	switch {
	case x < odds.Accept:
		return ReactAccept
	case x < odds.Accept+odds.Dismiss:
		return ReactDismiss
	}
	return ReactIgnore
}

func (o *owner) odds(t time.Time, topic, message string) Odds {
	r := o.sc.Reactions
	keys := make([]string, 0, len(r.Topics))
	for k := range r.Topics {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first match must not depend on map order
	hay := strings.ToLower(topic + " " + message)
	for _, k := range keys {
		if strings.Contains(hay, strings.ToLower(k)) {
			return r.Topics[k]
		}
	}
	local := t.In(o.tl.zone(t))
	for _, h := range r.Hours {
		if inWindow(local, nil, h.From, h.To) {
			return h.Odds
		}
	}
	if r.Default == (Odds{}) {
		return Odds{Ignore: 1}
	}
	return r.Default
}
