package attention

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/when"
)

// Informal dates resolve against when the line was written: a history
// line's own timestamp, MEMORY.md's modification time; Raven's replies and
// "today" chatter are not deadlines.
func TestDeadlinesInformal(t *testing.T) {
	// Now: Wednesday 2025-03-12 10:00 UTC (t0). MEMORY.md last written on
	// Monday 2025-03-10.
	monday := time.Date(2025, 3, 10, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		memory  string
		history string
		order   when.Order
		want    []string
		not     []string
	}{
		{"weekday from memory mtime", "- dentist Friday 15:00 needs confirming\n", "", when.DMY,
			[]string{`- 2025-03-14 15:00 (in 2 days, memory, from "Friday 15:00" written 2025-03-10): dentist Friday 15:00 needs confirming`}, nil},
		{"possessive weekday", "- finish the slides for Thursday's board meeting\n", "", when.DMY,
			[]string{`2025-03-13 (tomorrow, memory, from "Thursday's"`}, nil},
		{"tomorrow from the history line's time, not now",
			"", "- 2025-03-11T09:00:00Z [telegram:1] user: remind me to call the bank tomorrow\n", when.DMY,
			[]string{`2025-03-12 (today, history, from "tomorrow" written 2025-03-11): remind me to call the bank tomorrow`}, nil},
		{"a tomorrow written long ago has passed",
			"", "- 2025-03-01T09:00:00Z [telegram:1] user: pay the plumber tomorrow\n", when.DMY,
			nil, []string{"plumber"}},
		{"assistant's informal dates are not the owner's deadlines",
			"", "- 2025-03-12T09:00:00Z [telegram:1] assistant: I can look at it tomorrow\n", when.DMY,
			nil, []string{"look at it"}},
		{"today chatter is not a deadline", "", "- 2025-03-12T09:00:00Z [cli:local] user: what's on today\n", when.DMY,
			nil, []string{"what's on"}},
		{"today with a time is", "", "- 2025-03-12T09:00:00Z [cli:local] user: standup today at 16:30\n", when.DMY,
			[]string{`2025-03-12 16:30 (today, history, from "today at 16:30"`}, nil},
		{"in three days", "invoice due in 3 days\n", "", when.DMY, []string{`2025-03-13 (tomorrow, memory, from "in 3 days" written 2025-03-10)`}, nil},
		{"next week", "", "- 2025-03-12T09:00:00Z [cli:local] user: book the car service next week\n", when.DMY,
			[]string{`2025-03-17 (in 5 days, history, from "next week"`}, nil},
		{"end of month", "expenses by end of month\n", "", when.DMY, []string{`2025-03-31 (in 19 days, memory, from "end of month"`}, []string{"holiday"}},
		{"day month", "flights 15 Mar\n", "", when.DMY, []string{`2025-03-15 (in 3 days, memory, from "15 Mar"`}, nil},
		{"numeric month first", "rent 03/14\n", "", when.MDY, []string{`2025-03-14 (in 2 days, memory, from "03/14"`}, nil},
		{"numeric day first", "rent 14/03\n", "", when.DMY, []string{`2025-03-14 (in 2 days, memory, from "14/03"`}, nil},
		{"a line Raven noted resolves against its day, and its stamp is no deadline",
			"## Notes\n- invoice due in 3 days (noted 2025-03-11)\n", "", when.DMY,
			[]string{`2025-03-14 (in 2 days, memory, from "in 3 days" written 2025-03-11): invoice due in 3 days`}, []string{"noted", "2025-03-11 ("}},
		{"iso dates say nothing about resolution", "vat 2025-03-14\n", "", when.DMY, []string{"2025-03-14 (in 2 days, memory): vat"}, []string{"from"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Deadlines{Horizon: 30 * 24 * time.Hour, Dates: when.Resolver{Order: tc.order}}
			got, err := d.Produce(context.Background(), Input{Now: t0, Location: time.UTC, Memory: tc.memory, MemoryWritten: monday, History: tc.history})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("missing %q in:\n%s", w, got)
				}
			}
			if tc.want == nil && tc.not == nil && got != "" {
				t.Fatalf("want nothing, got:\n%s", got)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Fatalf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}

// An informal deadline becomes a plan slot on its day, like an ISO one.
func TestInformalDeadlineItems(t *testing.T) {
	monday := time.Date(2025, 3, 10, 8, 0, 0, 0, time.UTC)
	items := Deadlines{}.Items(Input{Now: t0, Location: time.UTC, Memory: "dentist Friday 15:00 needs confirming\n", MemoryWritten: monday})
	if len(items) != 1 {
		t.Fatalf("items = %+v", items)
	}
	it := items[0]
	if !it.At.Equal(time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)) || !it.HasTime || it.From != "Friday 15:00" || !it.Written.Equal(monday) {
		t.Fatalf("item = %+v", it)
	}
}
