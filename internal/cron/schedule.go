// Package cron runs the owner's scheduled jobs: schedules (every, cron, at),
// the shared jobs.json store, the claiming timer loop, firing and the cron tool.
package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// Schedule kinds.
const (
	KindEvery = "every"
	KindCron  = "cron"
	KindAt    = "at"
)

// MinEvery is the shortest accepted "every" interval.
const MinEvery = time.Second

// Typed bad-input errors; callers test them with errors.Is and show the
// wrapped message, which names the offending value.
var (
	ErrInvalidSchedule = errors.New("invalid schedule")
	ErrInvalidExpr     = errors.New("invalid cron expression")
	ErrUnknownTimezone = errors.New("unknown timezone")
	ErrAtInPast        = errors.New("at time is in the past")
	ErrEveryTooShort   = errors.New("every interval below 1s")
)

// Schedule says when a job fires. Exactly one of Every, Expr or At is set,
// matching Kind. It is stored in jobs.json as written by the owner.
type Schedule struct {
	Kind string `json:"kind"`
	// Every is a Go duration ("30m"); fires are aligned to the whole second
	// of the job's anchor so jobs with equal intervals fire together.
	Every string `json:"every,omitempty"`
	// Expr is a standard 5-field cron expression, evaluated in TZ.
	Expr string `json:"expr,omitempty"`
	// TZ is an IANA zone name; empty means UTC.
	TZ string `json:"tz,omitempty"`
	// At is a one-shot RFC 3339 time.
	At string `json:"at,omitempty"`
}

// Recurring reports whether the schedule fires more than once.
func (s Schedule) Recurring() bool { return s.Kind != KindAt }

// String is a short human form for listings.
func (s Schedule) String() string {
	switch s.Kind {
	case KindEvery:
		return "every " + s.Every
	case KindCron:
		tz := s.TZ
		if tz == "" {
			tz = "UTC"
		}
		return fmt.Sprintf("cron %q %s", s.Expr, tz)
	case KindAt:
		return "at " + s.At
	}
	return s.Kind
}

// Compiled is a parsed schedule ready to compute fire times.
type Compiled struct {
	kind  string
	every time.Duration
	spec  robfig.Schedule
	loc   *time.Location
	at    time.Time
}

var parser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)

// Compile parses and validates s. It does not check that an "at" time lies
// in the future: that is a property of creation, see Validate.
func (s Schedule) Compile() (*Compiled, error) {
	switch s.Kind {
	case KindEvery:
		if s.Expr != "" || s.At != "" || s.TZ != "" {
			return nil, fmt.Errorf("%w: every takes no expression, timezone or at", ErrInvalidSchedule)
		}
		d, err := time.ParseDuration(s.Every)
		if err != nil {
			return nil, fmt.Errorf("%w: every %q: want a duration such as 30s, 30m, 2h", ErrInvalidSchedule, s.Every)
		}
		if d < MinEvery {
			return nil, fmt.Errorf("%w: every %s", ErrEveryTooShort, d)
		}
		return &Compiled{kind: KindEvery, every: d}, nil
	case KindCron:
		if s.Every != "" || s.At != "" {
			return nil, fmt.Errorf("%w: cron takes no every or at", ErrInvalidSchedule)
		}
		loc := time.UTC
		if s.TZ != "" {
			// Local is machine-dependent; a schedule must mean the same thing
			// on every process that shares the data dir.
			if s.TZ == "Local" {
				return nil, fmt.Errorf("%w %q: name an IANA zone such as Europe/Berlin", ErrUnknownTimezone, s.TZ)
			}
			l, err := time.LoadLocation(s.TZ)
			if err != nil {
				return nil, fmt.Errorf("%w %q: want an IANA name such as Europe/Berlin", ErrUnknownTimezone, s.TZ)
			}
			loc = l
		}
		expr := strings.TrimSpace(s.Expr)
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "@") {
			return nil, fmt.Errorf("%w %q: want 5 fields (minute hour day-of-month month day-of-week); give the zone with tz", ErrInvalidExpr, s.Expr)
		}
		if n := len(strings.Fields(expr)); n != 5 {
			return nil, fmt.Errorf("%w %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", ErrInvalidExpr, s.Expr, n)
		}
		spec, err := parser.Parse(expr)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrInvalidExpr, s.Expr, err)
		}
		return &Compiled{kind: KindCron, spec: spec, loc: loc}, nil
	case KindAt:
		if s.Every != "" || s.Expr != "" || s.TZ != "" {
			return nil, fmt.Errorf("%w: at takes no every, expression or timezone", ErrInvalidSchedule)
		}
		t, err := time.Parse(time.RFC3339, s.At)
		if err != nil {
			return nil, fmt.Errorf("%w: at %q: want RFC 3339 such as 2026-12-01T09:00:00+01:00", ErrInvalidSchedule, s.At)
		}
		return &Compiled{kind: KindAt, at: t}, nil
	}
	return nil, fmt.Errorf("%w: unknown kind %q (want every, cron or at)", ErrInvalidSchedule, s.Kind)
}

// Validate compiles s and checks it against now for creation: an "at" time
// must lie in the future.
func (s Schedule) Validate(now time.Time) (*Compiled, error) {
	c, err := s.Compile()
	if err != nil {
		return nil, err
	}
	if c.kind == KindAt && !c.at.After(now) {
		return nil, fmt.Errorf("%w: %s (now %s)", ErrAtInPast, s.At, now.Format(time.RFC3339))
	}
	return c, nil
}

// First returns the first fire time of a job created at anchor.
func (c *Compiled) First(anchor time.Time) (time.Time, bool) {
	switch c.kind {
	case KindEvery:
		return anchor.Truncate(time.Second).Add(c.every), true
	case KindAt:
		return c.at, true
	}
	return c.Next(anchor, anchor)
}

// Next returns the first fire strictly after after. anchor is the job's
// first-fire phase reference (used by every); the zero time means after.
// ok is false when the schedule never fires again.
func (c *Compiled) Next(anchor, after time.Time) (time.Time, bool) {
	switch c.kind {
	case KindEvery:
		base := anchor.Truncate(time.Second)
		if base.IsZero() || base.After(after) {
			base = after.Truncate(time.Second)
		}
		// Skipped periods coalesce into one fire: jump past after.
		k := after.Sub(base)/c.every + 1
		return base.Add(k * c.every), true
	case KindAt:
		if c.at.After(after) {
			return c.at, true
		}
		return time.Time{}, false
	}
	return c.nextCron(after)
}

// nextCron walks the expression in wall-clock time (a DST-free UTC copy of
// the zone's clock) and maps each candidate back to a real instant. robfig
// on its own skips a time that falls in a spring-forward gap and fires a
// time in a fall-back overlap twice; here a gap time fires once at the first
// valid instant after the gap, and an overlapped time fires once, at its
// first occurrence.
func (c *Compiled) nextCron(after time.Time) (time.Time, bool) {
	wall := naive(after.In(c.loc))
	for range 1000 {
		w := c.spec.Next(wall)
		if w.IsZero() {
			return time.Time{}, false
		}
		t := resolve(w, c.loc)
		if t.After(after) {
			return t, true
		}
		wall = w
	}
	return time.Time{}, false
}

// naive copies t's wall clock into UTC, where every day has 24 hours.
func naive(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// resolve maps a wall-clock time w (in UTC form) to the instant in loc:
// the earlier instant when w occurs twice, the end of the gap when w does
// not occur at all.
func resolve(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	got := naive(t)
	switch {
	case got.After(w): // in a gap; Go normalised forward
		start, _ := t.ZoneBounds()
		if !start.IsZero() && naive(start).After(w) {
			return start
		}
		return t
	case got.Before(w): // in a gap; Go normalised backward
		_, end := t.ZoneBounds()
		if !end.IsZero() {
			return end
		}
		return t
	}
	// w exists; if it also existed in the previous zone period (overlap),
	// the earlier instant wins.
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, curOff := t.Zone()
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	if prevOff > curOff {
		alt := t.Add(-time.Duration(prevOff-curOff) * time.Second)
		if alt.Before(start) && naive(alt.In(loc)).Equal(w) {
			return alt
		}
	}
	return t
}
