package simulate

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Local times land in the zone the owner is in then; a trip moves them.
func TestTimelineFollowsTheOwner(t *testing.T) {
	sc := Scenario{Start: "2026-03-02", Timezone: "Europe/London", Days: 7,
		Travel: []Travel{{Day: 2, At: "12:00", Timezone: "America/New_York"}}}
	tl, err := newTimeline(sc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		day  int
		at   string
		want string
	}{
		{0, "09:00", "2026-03-02T09:00:00Z"},
		{2, "11:00", "2026-03-04T11:00:00Z"}, // before the trip: London
		{2, "18:00", "2026-03-04T23:00:00Z"}, // after: New York, UTC-5
		{3, "09:00", "2026-03-05T14:00:00Z"}, // New York
		{2, "12:00", "2026-03-04T17:00:00Z"}, // the trip is at 12:00 London; noon comes again in New York
		{2, "03:00", "2026-03-04T03:00:00Z"},
	}
	for _, c := range cases {
		if got := tl.at(c.day, c.at).UTC().Format(time.RFC3339); got != c.want {
			t.Errorf("day %d %s = %s, want %s", c.day, c.at, got, c.want)
		}
	}
	if z := tl.zone(tl.at(3, "09:00")).String(); z != "America/New_York" {
		t.Errorf("zone after the trip: %s", z)
	}
}

func TestOwnerAttachedAndOdds(t *testing.T) {
	sc := Scenario{Start: "2026-03-02", Timezone: "UTC", Days: 7}
	tl, _ := newTimeline(sc)
	o := &owner{tl: tl, rng: rand.New(rand.NewPCG(1, 2)), sc: Owner{
		Attached: []Window{{Days: []string{"weekdays"}, From: "20:00", To: "02:00", Surface: "tui"}},
		Reactions: Reactions{
			Default: Odds{Accept: 1},
			Hours:   []HourOdds{{From: "07:00", To: "09:00", Odds: Odds{Dismiss: 1}}},
			Topics:  map[string]Odds{"deadline": {Ignore: 1}},
		},
	}}
	at := func(d, hh int) time.Time { return time.Date(2026, 3, 2+d, hh, 30, 0, 0, time.UTC) }
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{at(0, 21), "tui"}, {at(1, 1), "tui"}, // Tuesday 01:30: Monday's window
		{at(0, 12), ""}, {at(5, 21), ""}, // Saturday
		{at(6, 1), ""}, // Sunday 01:30: Saturday's window does not exist
	} {
		if got := o.attachedAt(c.t); got != c.want {
			t.Errorf("%s: attached %q, want %q", c.t.Format("Mon 15:04"), got, c.want)
		}
	}
	for _, c := range []struct {
		t          time.Time
		topic, msg string
		want       string
	}{
		{at(0, 12), "walk", "take a walk", ReactAccept},
		{at(0, 8), "walk", "take a walk", ReactDismiss},
		{at(0, 8), "deadline-0302-ab", "Due today", ReactIgnore},
	} {
		if got := o.react(c.t, c.topic, c.msg); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.t.Format("15:04"), c.topic, got, c.want)
		}
	}
}

// Flying east skips local hours: a time in the gap is the moment of the change.
func TestTimelineEastwardGap(t *testing.T) {
	tl, err := newTimeline(Scenario{Start: "2026-03-02", Timezone: "America/New_York", Days: 3,
		Travel: []Travel{{Day: 1, At: "12:00", Timezone: "Europe/London"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ at, want string }{
		{"11:00", "2026-03-03T16:00:00Z"}, // New York, before the flight
		{"14:00", "2026-03-03T17:00:00Z"}, // skipped: the change itself
		{"18:00", "2026-03-03T18:00:00Z"}, // London
	} {
		if got := tl.at(1, c.at).UTC().Format(time.RFC3339); got != c.want {
			t.Errorf("%s = %s, want %s", c.at, got, c.want)
		}
	}
}
