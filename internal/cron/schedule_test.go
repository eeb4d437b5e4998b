package cron

import (
	"errors"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return l
}

// fires lists every fire of s in [from, to).
func fires(t *testing.T, s Schedule, from, to time.Time) []time.Time {
	t.Helper()
	c, err := s.Compile()
	if err != nil {
		t.Fatalf("compile %+v: %v", s, err)
	}
	var out []time.Time
	cur := from
	for {
		n, ok := c.Next(from, cur)
		if !ok || !n.Before(to) {
			return out
		}
		out = append(out, n)
		cur = n
	}
}

func TestCronDST(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	ny := mustLoc(t, "America/New_York")
	tests := []struct {
		name string
		expr string
		tz   string
		from time.Time // local midnight before the day under test
		want []time.Time
	}{
		{
			name: "berlin spring forward 02:30 fires once at gap end",
			expr: "30 2 * * *", tz: "Europe/Berlin",
			from: time.Date(2026, 3, 29, 0, 0, 0, 0, berlin),
			want: []time.Time{time.Date(2026, 3, 29, 3, 0, 0, 0, berlin)},
		},
		{
			name: "berlin fall back 02:30 fires once at first occurrence",
			expr: "30 2 * * *", tz: "Europe/Berlin",
			from: time.Date(2026, 10, 25, 0, 0, 0, 0, berlin),
			// 02:30 CEST = 00:30 UTC; the second 02:30 (CET, 01:30 UTC) is skipped.
			want: []time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)},
		},
		{
			name: "berlin ordinary day",
			expr: "30 2 * * *", tz: "Europe/Berlin",
			from: time.Date(2026, 3, 28, 0, 0, 0, 0, berlin),
			want: []time.Time{time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC)},
		},
		{
			name: "new york spring forward every 15 min in the gap",
			expr: "*/30 2 * * *", tz: "America/New_York",
			from: time.Date(2026, 3, 8, 0, 0, 0, 0, ny),
			// 02:00 and 02:30 do not exist; both collapse into one fire at 03:00 EDT.
			want: []time.Time{time.Date(2026, 3, 8, 3, 0, 0, 0, ny)},
		},
		{
			name: "new york fall back hourly fires each wall hour once",
			expr: "0 * * * *", tz: "America/New_York",
			from: time.Date(2026, 11, 1, 0, 30, 0, 0, ny),
			want: []time.Time{
				time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), // 01:00 EDT
				time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC), // 02:00 EST
			},
		},
		{
			name: "weekday 9:00 in UTC by default",
			expr: "0 9 * * 1-5", tz: "",
			from: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), // Friday after 9
			want: []time.Time{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := tt.from.Add(24 * time.Hour)
			if tt.name == "new york fall back hourly fires each wall hour once" {
				to = time.Date(2026, 11, 1, 7, 30, 0, 0, time.UTC)
			}
			if tt.name == "weekday 9:00 in UTC by default" {
				to = time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
			}
			got := fires(t, Schedule{Kind: KindCron, Expr: tt.expr, TZ: tt.tz}, tt.from, to)
			if len(got) != len(tt.want) {
				t.Fatalf("fires = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) {
					t.Fatalf("fire %d = %s, want %s", i, got[i].UTC(), tt.want[i].UTC())
				}
			}
		})
	}
}

func TestCronStartedInsideRepeatedHour(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	// 02:10 CET is the second pass through 02:xx; the 02:30 of this day
	// already happened (CEST), so the next fire is tomorrow.
	after := time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC)
	if naive(after.In(berlin)).Hour() != 2 {
		t.Fatalf("setup: %s", after.In(berlin))
	}
	c, _ := Schedule{Kind: KindCron, Expr: "30 2 * * *", TZ: "Europe/Berlin"}.Compile()
	n, _ := c.Next(time.Time{}, after)
	want := time.Date(2026, 10, 26, 2, 30, 0, 0, berlin)
	if !n.Equal(want) {
		t.Fatalf("next = %s, want %s", n, want)
	}
}

func TestEveryAlignedAndCoalesced(t *testing.T) {
	c, err := Schedule{Kind: KindEvery, Every: "10s"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 700_000_000, time.UTC)
	first, _ := c.First(anchor)
	if want := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC); !first.Equal(want) {
		t.Fatalf("first = %s, want %s", first, want)
	}
	// An hour of downtime coalesces into the next slot after now.
	now := first.Add(time.Hour + 3*time.Second)
	n, _ := c.Next(anchor, now)
	if want := first.Add(time.Hour + 10*time.Second); !n.Equal(want) {
		t.Fatalf("next = %s, want %s", n, want)
	}
	n2, _ := c.Next(anchor, first)
	if want := first.Add(10 * time.Second); !n2.Equal(want) {
		t.Fatalf("next after first = %s, want %s", n2, want)
	}
}

func TestScheduleErrors(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Schedule
		want error
	}{
		{"bad expr", Schedule{Kind: KindCron, Expr: "61 * * * *"}, ErrInvalidExpr},
		{"six fields", Schedule{Kind: KindCron, Expr: "0 0 9 * * 1"}, ErrInvalidExpr},
		{"descriptor", Schedule{Kind: KindCron, Expr: "@daily"}, ErrInvalidExpr},
		{"tz in expr", Schedule{Kind: KindCron, Expr: "TZ=UTC 0 9 * * *"}, ErrInvalidExpr},
		{"unknown tz", Schedule{Kind: KindCron, Expr: "0 9 * * *", TZ: "Mars/Olympus"}, ErrUnknownTimezone},
		{"local tz", Schedule{Kind: KindCron, Expr: "0 9 * * *", TZ: "Local"}, ErrUnknownTimezone},
		{"at past", Schedule{Kind: KindAt, At: "2026-05-01T09:00:00Z"}, ErrAtInPast},
		{"at now", Schedule{Kind: KindAt, At: "2026-06-01T12:00:00Z"}, ErrAtInPast},
		{"at garbage", Schedule{Kind: KindAt, At: "tomorrow"}, ErrInvalidSchedule},
		{"every short", Schedule{Kind: KindEvery, Every: "500ms"}, ErrEveryTooShort},
		{"every negative", Schedule{Kind: KindEvery, Every: "-1m"}, ErrEveryTooShort},
		{"every garbage", Schedule{Kind: KindEvery, Every: "often"}, ErrInvalidSchedule},
		{"unknown kind", Schedule{Kind: "hourly"}, ErrInvalidSchedule},
		{"mixed", Schedule{Kind: KindEvery, Every: "1m", Expr: "* * * * *"}, ErrInvalidSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.s.Validate(now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	ok := []Schedule{
		{Kind: KindEvery, Every: "1s"},
		{Kind: KindCron, Expr: "0 9 * * 1-5", TZ: "Europe/Berlin"},
		{Kind: KindAt, At: "2026-12-01T09:00:00+01:00"},
	}
	for _, s := range ok {
		if _, err := s.Validate(now); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}
