package when

import (
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	loc := time.FixedZone("owner", 2*3600)
	// Monday 30 November 2026, 10:00 in the owner's zone.
	written := time.Date(2026, 11, 30, 10, 0, 0, 0, loc)
	sunday := time.Date(2026, 12, 6, 9, 0, 0, 0, loc)
	cases := []struct {
		name    string
		line    string
		written time.Time
		order   Order
		want    string // "2006-01-02" or "2006-01-02 15:04"; "" for no date
		text    string
		form    Form
	}{
		{"iso", "report due 2026-12-04", written, DMY, "2026-12-04", "2026-12-04", FormISO},
		{"iso with time", "call at 2026-12-04 09:30", written, DMY, "2026-12-04 09:30", "2026-12-04 09:30", FormISO},
		{"weekday possessive", "finish the slides for Thursday's board meeting", written, DMY, "2026-12-03", "Thursday's", FormWeekday},
		{"weekday with time", "dentist Friday 15:00 needs confirming", written, DMY, "2026-12-04 15:00", "Friday 15:00", FormWeekday},
		{"on weekday", "pay rent on Monday", written, DMY, "2026-11-30", "Monday", FormWeekday},
		{"next weekday same week", "next Friday: review", written, DMY, "2026-12-11", "next Friday", FormWeekday},
		{"next weekday from sunday", "next Monday standup", sunday, DMY, "2026-12-07", "next Monday", FormWeekday},
		{"this weekday", "this Wednesday lunch", written, DMY, "2026-12-02", "this Wednesday", FormWeekday},
		{"tomorrow pm", "submit the form tomorrow 3pm", written, DMY, "2026-12-01 15:00", "tomorrow 3pm", FormRelative},
		{"tomorrow", "call mum tomorrow", written, DMY, "2026-12-01", "tomorrow", FormRelative},
		{"day after tomorrow", "the day after tomorrow we fly", written, DMY, "2026-12-02", "the day after tomorrow", FormRelative},
		{"tonight", "pack tonight", written, DMY, "2026-11-30", "tonight", FormToday},
		{"today at time", "standup today at 9:15am", written, DMY, "2026-11-30 09:15", "today at 9:15am", FormToday},
		{"next week", "dentist next week", written, DMY, "2026-12-07", "next week", FormRelative},
		{"next month", "renew passport next month", written, DMY, "2026-12-01", "next month", FormRelative},
		{"in days", "invoice due in 3 days", written, DMY, "2026-12-03", "in 3 days", FormRelative},
		{"in words", "in two weeks the lease ends", written, DMY, "2026-12-14", "in two weeks", FormRelative},
		{"end of month", "expenses by end of month", written, DMY, "2026-11-30", "end of month", FormRelative},
		{"end of the week", "draft by the end of the week", written, DMY, "2026-12-04", "the end of the week", FormRelative},
		{"this weekend", "clean the garage this weekend", written, DMY, "2026-12-05", "this weekend", FormRelative},
		{"day month", "flights on 15 Dec", written, DMY, "2026-12-15", "15 Dec", FormMonthDay},
		{"day of month", "the 3rd of January party", written, DMY, "2027-01-03", "3rd of January", FormMonthDay},
		{"month day", "December 15th deadline", written, DMY, "2026-12-15", "December 15th", FormMonthDay},
		{"month day year", "Jan 5, 2027 kickoff", written, DMY, "2027-01-05", "Jan 5, 2027", FormMonthDay},
		{"past month day stays this year", "back on 20 November", written, DMY, "2026-11-20", "20 November", FormMonthDay},
		{"numeric mdy", "taxes 12/15", written, MDY, "2026-12-15", "12/15", FormNumeric},
		{"numeric dmy", "taxes 15/12", written, DMY, "2026-12-15", "15/12", FormNumeric},
		{"numeric ambiguous dmy", "party 12/11", written, DMY, "2026-11-12", "12/11", FormNumeric},
		{"numeric ambiguous mdy", "party 12/11", written, MDY, "2026-12-11", "12/11", FormNumeric},
		{"numeric unambiguous under mdy", "taxes 15/12", written, MDY, "2026-12-15", "15/12", FormNumeric},
		{"numeric with year", "visa 03/01/27", written, DMY, "2027-01-03", "03/01/27", FormNumeric},
		{"dotted with year", "Termin 15.12.2026 10:00", written, DMY, "2026-12-15 10:00", "15.12.2026 10:00", FormNumeric},
		{"decimal is not a date", "costs 3.5 euros", written, DMY, "", "", ""},
		{"version is not a date", "upgrade to 1.26.8", written, DMY, "", "", ""},
		{"path is not a date", "see docs/12/15/notes", written, DMY, "", "", ""},
		{"fraction in a word", "ratio a1/2b", written, DMY, "", "", ""},
		{"may the verb", "you may 5 times retry", written, DMY, "", "", ""},
		{"May the month", "May 5 wedding", written, DMY, "2027-05-05", "May 5", FormMonthDay},
		{"31 Feb is no date", "31 Feb", written, DMY, "", "", ""},
		{"no date", "buy milk", written, DMY, "", "", ""},
		{"abbreviated weekday is a word", "sat down at the sun", written, DMY, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms := Resolver{Order: c.order}.Find(c.line, c.written)
			if c.want == "" {
				if len(ms) != 0 {
					t.Fatalf("Find(%q) = %+v, want none", c.line, ms)
				}
				return
			}
			if len(ms) != 1 {
				t.Fatalf("Find(%q) = %+v, want one match", c.line, ms)
			}
			m := ms[0]
			got := m.At.Format(time.DateOnly)
			if m.HasTime {
				got += m.At.Format(" 15:04")
			}
			if got != c.want || m.Text != c.text || m.Form != c.form {
				t.Fatalf("Find(%q) = %s %q %s, want %s %q %s", c.line, got, m.Text, m.Form, c.want, c.text, c.form)
			}
			if m.At.Location() != loc {
				t.Fatalf("resolved in %v, want the owner's zone", m.At.Location())
			}
		})
	}
}

func TestFindSeveral(t *testing.T) {
	written := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ms := Resolver{}.Find("move the review from Tuesday to Friday 14:00", written)
	if len(ms) != 2 || ms[0].Form != FormWeekday || ms[1].Form != FormWeekday {
		t.Fatalf("got %+v, want two weekdays", ms)
	}
	for _, m := range ms {
		if m.HasTime {
			t.Fatalf("with two dates a time is attached to neither: %+v", m)
		}
	}
}

func TestOrderFor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		setting string
		getenv  func(string) string
		want    Order
	}{
		{OrderMDY, env(), MDY},
		{OrderDMY, env("LANG", "en_US.UTF-8"), DMY},
		{OrderAuto, env("LANG", "en_US.UTF-8"), MDY},
		{OrderAuto, env("LANG", "en_GB.UTF-8"), DMY},
		{OrderAuto, env("LC_ALL", "de_DE", "LANG", "en_US.UTF-8"), DMY},
		{OrderAuto, env("LC_TIME", "en_PH.UTF-8"), MDY},
		{OrderAuto, env("LANG", "C.UTF-8"), DMY},
		{OrderAuto, env(), DMY},
	}
	for _, c := range cases {
		if got := OrderFor(c.setting, c.getenv); got != c.want {
			t.Errorf("OrderFor(%q) = %v, want %v", c.setting, got, c.want)
		}
	}
}

func BenchmarkFind(b *testing.B) {
	written := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := Resolver{}
	b.ReportAllocs()
	for b.Loop() {
		r.Find("dentist Friday 15:00 needs confirming before the board meeting on 15 Dec", written)
	}
}

func BenchmarkFindNoDate(b *testing.B) {
	written := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := Resolver{}
	b.ReportAllocs()
	for b.Loop() {
		r.Find("thanks, that looks good to me, let's go with the second option", written)
	}
}
