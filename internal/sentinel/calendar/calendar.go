// Package calendar reads the owner's calendar from local iCalendar files —
// what calendar apps export — and lists upcoming events, recurring ones expanded, in the owner's zone.
package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"

	"github.com/raven-agent/raven/internal/configtype"
)

// Config is the sentinel.calendar section.
type Config struct {
	// Path is an .ics file or a directory of them (not recursive); empty
	// turns the calendar off (the default). It must be absolute.
	Path string `json:"path"`
	// Horizon is how far ahead events are listed (default 48h).
	Horizon configtype.Duration `json:"horizon"`
	// Max events listed (default 20).
	Max int `json:"max"`
}

// Defaults.
const (
	DefaultHorizon = 48 * time.Hour
	DefaultMax     = 20
	// MaxFileBytes bounds one .ics file; MaxFiles the files read from a
	// directory; MaxOccurrences the instances one recurring event yields in
	// the horizon (a FREQ=MINUTELY rule must not flood the planner).
	MaxFileBytes   = 8 << 20
	MaxFiles       = 64
	MaxOccurrences = 50
)

// DefaultConfig is the calendar off, with the default horizon and size.
func DefaultConfig() Config {
	return Config{Horizon: configtype.Duration(DefaultHorizon), Max: DefaultMax}
}

// Validate checks c; field names are relative to the sentinel section.
func (c Config) Validate() error {
	if c.Path != "" && (!filepath.IsAbs(c.Path) || !configtype.OneLine(c.Path)) {
		return configtype.Invalid("calendar.path", "must be an absolute path to an .ics file or a directory, got %q", c.Path)
	}
	if c.Horizon < configtype.Duration(time.Hour) || c.Horizon > configtype.Duration(31*24*time.Hour) {
		return configtype.Invalid("calendar.horizon", "must be 1h..744h")
	}
	if c.Max < 1 || c.Max > 200 {
		return configtype.Invalid("calendar.max", "must be 1..200")
	}
	return nil
}

// Event is one occurrence.
type Event struct {
	Title    string    `json:"title"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	AllDay   bool      `json:"all_day,omitempty"`
	Location string    `json:"location,omitempty"`
}

// Errors for a file that is skipped.
var (
	ErrTooLarge  = errors.New("calendar: file too large")
	ErrTruncated = errors.New("truncated")
)

// Source lists events from Config.Path. Files are parsed again only when
// their size or modification time changed, so a tick costs a stat per file.
type Source struct {
	cfg Config
	loc *time.Location
	log *slog.Logger

	mu    sync.Mutex
	files map[string]parsed
}

type parsed struct {
	size   int64
	mtime  time.Time
	events []*ical.Event
	err    error
}

// New returns a source; loc is the owner's zone (floating times and
// all-day events are read in it).
func New(cfg Config, loc *time.Location, log *slog.Logger) *Source {
	if cfg.Horizon <= 0 {
		cfg.Horizon = configtype.Duration(DefaultHorizon)
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if loc == nil {
		loc = time.Local
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{cfg: cfg, loc: loc, log: log, files: map[string]parsed{}}
}

// Events lists the occurrences overlapping [now, now+Horizon), soonest
// first, at most Max. A file that cannot be read or parsed is skipped and
// reported in the joined error; the others still count.
func (s *Source) Events(now time.Time) ([]Event, error) {
	if s.cfg.Path == "" {
		return nil, nil
	}
	paths, err := s.list()
	if err != nil {
		return nil, err
	}
	from, to := now, now.Add(s.cfg.Horizon.D())
	var out []Event
	var errs []error
	for _, p := range paths {
		evs, err := s.parse(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s.expand(evs, from, to)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	if len(out) > s.cfg.Max {
		out = out[:s.cfg.Max]
	}
	return out, errors.Join(errs...)
}

func (s *Source) list() ([]string, error) {
	fi, err := os.Stat(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	if !fi.IsDir() {
		return []string{s.cfg.Path}, nil
	}
	ents, err := os.ReadDir(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.EqualFold(filepath.Ext(e.Name()), ".ics") {
			out = append(out, filepath.Join(s.cfg.Path, e.Name()))
		}
		if len(out) == MaxFiles {
			s.log.Warn("calendar: too many files; the rest are ignored", "dir", s.cfg.Path, "max", MaxFiles)
			break
		}
	}
	return out, nil
}

func (s *Source) parse(path string) ([]*ical.Event, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	s.mu.Lock()
	c, ok := s.files[path]
	s.mu.Unlock()
	if ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.events, c.err
	}
	c = parsed{size: fi.Size(), mtime: fi.ModTime()}
	if fi.Size() > MaxFileBytes {
		c.err = fmt.Errorf("%w: %s is %d bytes (max %d)", ErrTooLarge, path, fi.Size(), MaxFileBytes)
	} else {
		c.events, c.err = decode(io.LimitReader(fh, MaxFileBytes+1), path)
	}
	if c.err != nil {
		s.log.Warn("calendar: file skipped", "path", path, "err", c.err)
	}
	s.mu.Lock()
	s.files[path] = c
	s.mu.Unlock()
	return c.events, c.err
}

func decode(r io.Reader, path string) ([]*ical.Event, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("calendar: %s: %w", path, err)
	}
	// The decoder takes end of input inside a calendar for a clean end: a
	// file cut short (a sync in progress) must not read as fewer events.
	if t := bytes.TrimSpace(data); len(t) > 0 && !bytes.HasSuffix(bytes.ToUpper(t), []byte("END:VCALENDAR")) {
		return nil, fmt.Errorf("calendar: %s: %w: does not end with END:VCALENDAR", path, ErrTruncated)
	}
	var out []*ical.Event
	dec := ical.NewDecoder(bytes.NewReader(data))
	for {
		cal, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("calendar: %s: %w", path, err)
		}
		for _, c := range cal.Children {
			if c.Name == ical.CompEvent {
				out = append(out, &ical.Event{Component: c})
			}
		}
	}
}

// expand turns events into the occurrences overlapping [from, to):
// recurring ones through their RRULE/RDATE/EXDATE set, with instances a
// RECURRENCE-ID override moved or cancelled replaced by the override.
func (s *Source) expand(evs []*ical.Event, from, to time.Time) []Event {
	type key struct {
		uid string
		at  int64
	}
	overridden := map[key]bool{}
	for _, e := range evs {
		if p := e.Props.Get(ical.PropRecurrenceID); p != nil {
			if t, err := p.DateTime(s.loc); err == nil {
				overridden[key{uid(e), t.Unix()}] = true
			}
		}
	}
	var out []Event
	for _, e := range evs {
		if cancelled(e) {
			continue
		}
		start, err := e.DateTimeStart(s.loc)
		if err != nil {
			s.log.Debug("calendar: event without a usable start", "uid", uid(e), "err", err)
			continue
		}
		end, _ := e.DateTimeEnd(s.loc)
		dur := end.Sub(start)
		if dur < 0 {
			dur = 0
		}
		base := Event{Title: text(e, ical.PropSummary), Location: text(e, ical.PropLocation), AllDay: allDay(e)}
		if base.Title == "" {
			base.Title = "(untitled event)"
		}
		set, err := recurrence(e, start, s.loc)
		if err != nil {
			s.log.Debug("calendar: bad recurrence; first instance only", "uid", uid(e), "err", err)
		}
		if set == nil || e.Props.Get(ical.PropRecurrenceID) != nil {
			if overlaps(start, dur, from, to) {
				out = append(out, s.occurrence(base, start, dur))
			}
			continue
		}
		// An occurrence that started before from but runs past it is
		// still on: look back by the event's length.
		n := 0
		for _, at := range set.Between(from.Add(-dur), to, true) {
			if overridden[key{uid(e), at.Unix()}] || !overlaps(at, dur, from, to) {
				continue
			}
			out = append(out, s.occurrence(base, at, dur))
			if n++; n == MaxOccurrences {
				break
			}
		}
	}
	return out
}

// recurrence builds the event's set itself rather than through
// Component.RecurrenceSet, which reads EXDATE where RDATE is meant.
func recurrence(e *ical.Event, start time.Time, loc *time.Location) (*rrule.Set, error) {
	opt, err := e.Props.RecurrenceRule()
	if err != nil || opt == nil {
		return nil, err
	}
	opt.Dtstart = start
	rule, err := rrule.NewRRule(*opt)
	if err != nil {
		return nil, err
	}
	set := &rrule.Set{}
	set.RRule(rule)
	set.DTStart(start)
	for _, name := range []string{ical.PropRecurrenceDates, ical.PropExceptionDates} {
		for _, p := range e.Props.Values(name) {
			// A property may hold a comma-separated list of times.
			for _, v := range strings.Split(p.Value, ",") {
				q := p
				q.Value = strings.TrimSpace(v)
				t, err := q.DateTime(loc)
				if err != nil {
					continue
				}
				if name == ical.PropRecurrenceDates {
					set.RDate(t)
				} else {
					set.ExDate(t)
				}
			}
		}
	}
	return set, nil
}

func overlaps(start time.Time, dur time.Duration, from, to time.Time) bool {
	end := start.Add(dur)
	if dur == 0 {
		return !start.Before(from) && start.Before(to)
	}
	return end.After(from) && start.Before(to)
}

func (s *Source) occurrence(base Event, at time.Time, dur time.Duration) Event {
	at = at.In(s.loc) // an event's TZID is not the owner's zone
	base.Start = at
	if dur > 0 {
		base.End = at.Add(dur)
	}
	return base
}

func uid(e *ical.Event) string { return text(e, ical.PropUID) }

func text(e *ical.Event, name string) string {
	v, err := e.Props.Text(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(v)
}

func allDay(e *ical.Event) bool {
	p := e.Props.Get(ical.PropDateTimeStart)
	return p != nil && (p.ValueType() == ical.ValueDate || len(p.Value) == len("20060102"))
}

func cancelled(e *ical.Event) bool {
	st, err := e.Status()
	return err == nil && st == ical.EventCancelled
}
