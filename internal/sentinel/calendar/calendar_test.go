package calendar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	return loc
}

func TestEvents(t *testing.T) {
	loc := berlin(t)
	dir := t.TempDir()
	for _, f := range []string{"work.ics"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Tuesday 1 December 2026, 09:40 in Berlin: the day's standup is on.
	now := time.Date(2026, 12, 1, 9, 40, 0, 0, loc)
	src := New(Config{Path: dir, Horizon: configtype.Duration(60 * time.Hour), Max: 20}, loc, nil)
	evs, err := src.Events(now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Start.In(loc).Format("Mon 02 15:04")+" "+e.Title)
	}
	want := []string{
		"Tue 01 09:30 Standup",         // started, still running
		"Thu 03 11:00 Standup (moved)", // the override replaces Thursday's 09:30
		"Thu 03 15:00 Board meeting",   // 14:00Z
	}
	// Wednesday's standup is an EXDATE; the lunch is cancelled.
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if evs[0].Location != "Room 4" || evs[0].End.Sub(evs[0].Start) != 15*time.Minute {
		t.Fatalf("first event: %+v", evs[0])
	}
}

func TestEventsAllDayAndBounds(t *testing.T) {
	loc := berlin(t)
	path, _ := filepath.Abs(filepath.Join("testdata", "home.ics"))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, loc)
	evs, err := New(Config{Path: path, Horizon: configtype.Duration(48 * time.Hour), Max: 200}, loc, nil).Events(now)
	if err != nil {
		t.Fatal(err)
	}
	var bday, noise int
	for _, e := range evs {
		switch e.Title {
		case "Mum's birthday":
			bday++
			if !e.AllDay || e.Start.In(loc).Format("2006-01-02 15:04") != "2026-12-02 00:00" {
				t.Fatalf("all-day event: %+v", e)
			}
		case "Noise":
			noise++
		}
	}
	if bday != 1 {
		t.Fatalf("birthday listed %d times: %+v", bday, evs)
	}
	if noise != MaxOccurrences {
		t.Fatalf("a minutely rule yields %d occurrences, want the cap %d", noise, MaxOccurrences)
	}
}

func TestEventsBadFiles(t *testing.T) {
	loc := time.UTC
	dir := t.TempDir()
	good, _ := os.ReadFile(filepath.Join("testdata", "work.ics"))
	os.WriteFile(filepath.Join(dir, "a-good.ics"), good, 0o600)
	os.WriteFile(filepath.Join(dir, "b-broken.ics"), []byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:nonsense"), 0o600)
	big := filepath.Join(dir, "c-big.ics")
	fh, _ := os.Create(big)
	fh.Truncate(MaxFileBytes + 1)
	fh.Close()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a calendar"), 0o600)
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, loc)
	evs, err := New(Config{Path: dir, Horizon: configtype.Duration(24 * time.Hour), Max: 20}, loc, nil).Events(now)
	if err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "b-broken.ics") {
		t.Fatalf("err = %v, want the broken and the oversize file named", err)
	}
	if len(evs) == 0 {
		t.Fatal("the good file's events were lost to the bad ones")
	}
}

func TestEventsReparseOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cal.ics")
	write := func(title string, mtime time.Time) {
		body := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:u\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261201T100000Z\r\nSUMMARY:" + title + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, mtime, mtime)
	}
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("Alpha", t1)
	src := New(Config{Path: path, Horizon: configtype.Duration(24 * time.Hour), Max: 5}, time.UTC, nil)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if evs, _ := src.Events(now); len(evs) != 1 || evs[0].Title != "Alpha" {
		t.Fatalf("%+v", evs)
	}
	write("Omega", t1.Add(time.Hour)) // same size, new mtime
	if evs, _ := src.Events(now); len(evs) != 1 || evs[0].Title != "Omega" {
		t.Fatalf("not re-read after a change: %+v", evs)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		c    Config
		want string
	}{
		{DefaultConfig(), ""},
		{Config{Path: "/home/me/cal.ics", Horizon: configtype.Duration(time.Hour), Max: 1}, ""},
		{Config{Path: "cal.ics", Horizon: configtype.Duration(time.Hour), Max: 1}, "calendar.path"},
		{Config{Horizon: configtype.Duration(time.Minute), Max: 1}, "calendar.horizon"},
		{Config{Horizon: configtype.Duration(time.Hour), Max: 0}, "calendar.max"},
	}
	for _, c := range cases {
		err := c.c.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", c.c, err, c.want)
		}
	}
}

func BenchmarkEventsCached(b *testing.B) {
	path, _ := filepath.Abs(filepath.Join("testdata", "work.ics"))
	src := New(Config{Path: path, Horizon: configtype.Duration(48 * time.Hour), Max: 20}, time.UTC, nil)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Events(now); err != nil {
			b.Fatal(err)
		}
	}
}
