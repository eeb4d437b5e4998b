package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// FuzzJobsFile: jobs.json bytes either load through the store (and the
// loaded file, written back as the store writes it, loads the same) or are
// refused as ErrCorrupt / ErrNewerSchema, the corrupt file moved aside
// byte for byte and never silently reset.
func FuzzJobsFile(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"jobs":[]}`,
		`{"version":1,"jobs":[{"id":"j1","name":"standup","message":"Remind me of the standup","schedule":{"kind":"cron","expr":"0 9 * * 1-5","tz":"Europe/London"},"deliver":true,"channel":"telegram","enabled":true,"created_at":"2026-11-30T08:00:00Z","next_run_at":"2026-12-01T09:00:00Z","fires":3}]}`,
		`{"version":1,"jobs":[{"id":"j2","name":"water","message":"Drink water","schedule":{"kind":"every","every":"2h"},"deliver":false,"enabled":true,"created_at":"2026-11-30T08:00:00+01:00","claim":{"pid":4242,"owner":"a1b2","claimed_at":"2026-11-30T10:00:00Z","scheduled_at":"2026-11-30T10:00:00Z"},"fires":0}]}`,
		`{"version":1,"jobs":[{"id":"j3","name":"tax","message":"File the tax return","schedule":{"kind":"at","at":"2027-01-31T09:00:00Z"},"deliver":true,"enabled":false,"created_at":"2026-11-30T08:00:00Z","fires":1,"disabled_reason":"spent"}]}`,
		`{"version":2,"jobs":[]}`, `{"jobs":[]}`, `{"version":1,"jobs":[{"id":"a"},{"id":"a"}]}`, `{"version":1,"jobs":[]}}`, `{"version":0}`, ``,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "jobs.json")
		os.RemoveAll(path)
		aside, _ := filepath.Glob(path + ".corrupt-*")
		for _, a := range aside {
			os.Remove(a)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second) // distinct move-aside names
		s := NewStore(path, clk, nil, time.Second)
		err := s.Update(context.Background(), func(*File) (bool, error) { return false, nil })
		decoded, derr := decodeFile(data)
		switch {
		case errors.Is(err, ErrNewerSchema):
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("a newer file was touched: %q", data)
			}
			return
		case err != nil:
			if !errors.Is(err, ErrCorrupt) || derr == nil {
				t.Fatalf("refusal of %q: %v (decode: %v)", data, err, derr)
			}
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) != 1 {
				t.Fatalf("corrupt %q not moved aside: %v", data, moved)
			}
			if got, _ := os.ReadFile(moved[0]); !bytes.Equal(got, data) {
				t.Fatalf("moved-aside bytes differ from %q", data)
			}
			return
		case derr != nil:
			t.Fatalf("store accepted %q that decodeFile refuses: %v", data, derr)
		}
		// Write it back as the store does, then read it as a new process.
		if err := s.Update(context.Background(), func(*File) (bool, error) { return true, nil }); err != nil {
			t.Fatalf("loaded %q but cannot save it: %v", data, err)
		}
		written, _ := os.ReadFile(path)
		again, err := decodeFile(written)
		if err != nil {
			t.Fatalf("the store's own file is refused: %v\n in  %q\n out %s", err, data, written)
		}
		if decoded.Jobs == nil {
			decoded.Jobs = []Job{} // the store writes no jobs as []
		}
		a, _ := json.Marshal(decoded)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the jobs:\n in  %q\n 1st %s\n 2nd %s", data, a, b)
		}
	})
}

var fuzzZones = []string{"", "UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Local", "Nowhere/City"}

// FuzzSchedule: any schedule either compiles or is refused with one of
// the typed errors, and a compiled one's next fire is always strictly
// after the time asked about.
func FuzzSchedule(f *testing.F) {
	f.Add("cron", "", "0 9 * * 1-5", uint8(2), "", int64(0), int64(3600))
	f.Add("cron", "", "30 2 * 3 0", uint8(3), "", int64(86400*90), int64(60))
	f.Add("cron", "", "*/15 * * * *", uint8(4), "", int64(0), int64(1))
	f.Add("cron", "", "0 0 30 2 *", uint8(1), "", int64(0), int64(0))
	f.Add("every", "30m", "", uint8(0), "", int64(-100), int64(7200))
	f.Add("every", "1s", "", uint8(0), "", int64(0), int64(1<<40))
	f.Add("at", "", "", uint8(0), "2026-12-24T18:00:00+01:00", int64(0), int64(0))
	f.Add("cron", "", "@daily", uint8(0), "", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, kind, every, expr string, zone uint8, at string, anchorOff, afterOff int64) {
		s := Schedule{Kind: kind, Every: every, Expr: expr, TZ: fuzzZones[int(zone)%len(fuzzZones)], At: at}
		c, err := s.Compile()
		if err != nil {
			if !errors.Is(err, ErrInvalidSchedule) && !errors.Is(err, ErrInvalidExpr) && !errors.Is(err, ErrUnknownTimezone) && !errors.Is(err, ErrEveryTooShort) {
				t.Fatalf("%+v: untyped refusal %v", s, err)
			}
			return
		}
		_ = s.String()
		// Anchors and asks within a century of now: the range real jobs live in.
		base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		const century = int64(100 * 365 * 24 * 3600)
		anchor := base.Add(time.Duration(anchorOff%century) * time.Second)
		after := anchor.Add(time.Duration(afterOff%century) * time.Second)
		if first, ok := c.First(anchor); ok && kind != KindAt && !first.After(anchor) {
			t.Fatalf("%+v: first fire %v not after the anchor %v", s, first, anchor)
		}
		for range 3 {
			next, ok := c.Next(anchor, after)
			if !ok {
				return
			}
			if !next.After(after) {
				t.Fatalf("%+v: next fire %v not after %v (anchor %v)", s, next, after, anchor)
			}
			after = next
		}
	})
}
