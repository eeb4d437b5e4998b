// Package attention maintains user_memory/attention.md: each producer owns
// one H2 section of derived decision signals the Sentinel's planner reads.
package attention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
)

// Section names of the built-in producers. They are the default
// sentinel.attention_sections, so what is written is what the planner reads.
const (
	SectionDeadlines = "Deadlines"
	SectionOpenLoops = "Open loops"
	// SectionPlan is the Sentinel's daily plan, written for the owner to
	// read (its producer lives in package sentinel, which owns PlanSlot).
	SectionPlan = "Today's plan"
)

// DefaultSections lists the built-in producers' sections in prompt order.
func DefaultSections() []string { return []string{SectionDeadlines, SectionOpenLoops} }

// Session is an owner conversation as producers see it.
type Session struct {
	Key           string    // "channel:chat_id"
	LastActive    time.Time // latest message of either side
	LastUser      string
	LastUserAt    time.Time // zero when unknown
	LastAssistant string
}

// Input is gathered once per update, outside any lock, and shared by every
// producer.
type Input struct {
	Now      time.Time
	Location *time.Location
	Memory   string // head of MEMORY.md
	// MemoryWritten is MEMORY.md's modification time: what its informal
	// dates ("Friday") are resolved against.
	MemoryWritten time.Time
	History       string // tail of HISTORY.md
	Sessions      []Session
}

// Producer computes one section's body from the input. It must be a pure
// function of in: the updater compares its output with the file to decide
// whether to write.
type Producer interface {
	Section() string
	Produce(ctx context.Context, in Input) (string, error)
}

// Options are the Updater's sources.
type Options struct {
	// Path is user_memory/attention.md.
	Path        string
	MemoryPath  string
	HistoryPath string
	// MemoryMaxBytes of MEMORY.md read (default 32 KiB); HistoryTailBytes
	// of HISTORY.md's end (default 32 KiB).
	MemoryMaxBytes   int
	HistoryTailBytes int
	// Sessions lists owner sessions active since a time; SessionWindow is
	// how far back (default 72h).
	Sessions      func(ctx context.Context, since time.Time) ([]Session, error)
	SessionWindow time.Duration
	Producers     []Producer
	// Location renders local dates (default time.Local).
	Location *time.Location
	// LockTimeout bounds waiting for the file lock (default 5s).
	LockTimeout time.Duration
	// MaxBytes is the largest attention.md the updater rewrites (default
	// DefaultMaxBytes); a bigger one is left untouched and reported.
	MaxBytes int64
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Defaults.
const (
	DefaultMemoryMaxBytes   = 32 << 10
	DefaultHistoryTailBytes = 32 << 10
	DefaultSessionWindow    = 72 * time.Hour
	DefaultMaxBytes         = 4 << 20
)

// Report says what one update did.
type Report struct {
	Written   []string         `json:"written,omitempty"`
	Unchanged []string         `json:"unchanged,omitempty"`
	Failed    map[string]error `json:"-"`
}

// Updater refreshes attention.md in two phases: every producer computes out
// of lock, then only sections whose body changed are spliced in under the
// file lock. A cold tick (nothing changed) writes nothing.
type Updater struct {
	o   Options
	clk clock.Clock
	log *slog.Logger
	mu  sync.Mutex // one update at a time per process
}

// NewUpdater returns an updater.
func NewUpdater(o Options) *Updater {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MemoryMaxBytes <= 0 {
		o.MemoryMaxBytes = DefaultMemoryMaxBytes
	}
	if o.HistoryTailBytes <= 0 {
		o.HistoryTailBytes = DefaultHistoryTailBytes
	}
	if o.SessionWindow <= 0 {
		o.SessionWindow = DefaultSessionWindow
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 5 * time.Second
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return &Updater{o: o, clk: o.Clock, log: o.Logger}
}

// Update runs every producer and splices the changed sections. It never
// fails as a whole: a failed producer leaves its section as it was and is
// reported in Report.Failed.
func (u *Updater) Update(ctx context.Context) Report {
	u.mu.Lock()
	defer u.mu.Unlock()
	rep := Report{Failed: map[string]error{}}
	if u.o.Path == "" || len(u.o.Producers) == 0 {
		return rep
	}
	in := u.gather(ctx)

	// Phase one: compute, no lock held.
	bodies := make(map[string]string, len(u.o.Producers))
	var order []string
	for _, p := range u.o.Producers {
		name := p.Section()
		body, err := produce(ctx, p, in)
		if err != nil {
			rep.Failed[name] = err
			u.log.Warn("attention: producer failed; section left as it was", "section", name, "err", err)
			continue
		}
		if _, dup := bodies[name]; !dup {
			order = append(order, name)
		}
		bodies[name] = body
	}

	// Compare with the file as it is; only changed sections take the lock.
	cur, err := memory.ReadWhole(u.o.Path, u.o.MaxBytes)
	if errors.Is(err, memory.ErrTooLarge) {
		// Never rewrite what was not read whole: the owner's end of the
		// file would go. One warning per tick, every section reported.
		u.log.Warn("attention: file too large; no section written this tick", "path", u.o.Path, "err", err)
		for _, name := range order {
			rep.Failed[name] = err
		}
		return rep
	}
	if err != nil {
		u.log.Warn("attention: read failed; every section is rewritten", "path", u.o.Path, "err", err)
	}
	existing := memory.Sections(cur)
	for _, name := range order {
		body := bodies[name]
		if old, ok := existing[name]; ok && strings.TrimSpace(old) == strings.TrimSpace(body) {
			rep.Unchanged = append(rep.Unchanged, name)
			continue
		}
		// Phase two: splice under the file lock (UpdateSection re-reads
		// under the lock, so a peer's concurrent splice is kept).
		lctx, cancel := context.WithTimeout(ctx, u.o.LockTimeout)
		changed, err := u.splice(lctx, name, body)
		cancel()
		switch {
		case err != nil:
			rep.Failed[name] = err
			u.log.Warn("attention: section not written", "section", name, "err", err)
		case changed:
			rep.Written = append(rep.Written, name)
		default:
			rep.Unchanged = append(rep.Unchanged, name)
		}
	}
	if len(rep.Written) > 0 {
		u.log.Debug("attention: sections refreshed", "written", rep.Written)
	}
	return rep
}

func (u *Updater) splice(ctx context.Context, name, body string) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(u.o.Path), 0o700); err != nil {
		return false, fmt.Errorf("attention: mkdir: %w", err)
	}
	changed, err := memory.UpdateSection(ctx, u.o.Path, name, body, u.o.MaxBytes)
	if err != nil {
		return false, fmt.Errorf("attention: splice %q into %s: %w", name, u.o.Path, err)
	}
	return changed, nil
}

// Input reads the sources an update would give its producers, for a
// consumer that needs them without writing attention.md.
func (u *Updater) Input(ctx context.Context) Input { return u.gather(ctx) }

// gather reads every source once. A missing or broken source leaves its
// field empty: producers see less, nothing fails.
func (u *Updater) gather(ctx context.Context) Input {
	in := Input{Now: u.clk.Now(), Location: u.o.Location}
	if u.o.MemoryPath != "" {
		s, err := memory.ReadBounded(u.o.MemoryPath, int64(u.o.MemoryMaxBytes))
		if err != nil {
			u.log.Debug("attention: MEMORY.md unreadable", "err", err)
		}
		in.Memory = s
		if fi, err := os.Stat(u.o.MemoryPath); err == nil {
			in.MemoryWritten = fi.ModTime()
		}
	}
	if u.o.HistoryPath != "" {
		s, err := memory.ReadTail(u.o.HistoryPath, u.o.HistoryTailBytes)
		if err != nil {
			u.log.Debug("attention: HISTORY.md unreadable", "err", err)
		}
		in.History = s
	}
	if u.o.Sessions != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					u.log.Warn("attention: session source panicked", "panic", r)
				}
			}()
			ss, err := u.o.Sessions(ctx, in.Now.Add(-u.o.SessionWindow))
			if err != nil {
				u.log.Debug("attention: sessions unavailable", "err", err)
			}
			in.Sessions = ss
		}()
	}
	return in
}

// produce runs p, turning a panic into an error so one broken producer
// cannot cost the others their update.
func produce(ctx context.Context, p Producer, in Input) (body string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("attention: producer %q panicked: %v\n%s", p.Section(), r, debug.Stack())
		}
	}()
	return p.Produce(ctx, in)
}
