// Package feedback records the lifecycle of every proactive nudge in
// sentinel/feedback.jsonl and serves the acceptance rate the policy learns from.
package feedback

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/jsonl"
	"github.com/raven-agent/raven/internal/sentinel/textcut"
	"github.com/raven-agent/raven/internal/statefile"
)

// Lifecycle events.
const (
	EventDispatched = "dispatched"
	EventAccepted   = "accepted"
	EventDismissed  = "dismissed"
	EventNeutral    = "neutral"
)

// Sources of a nudge.
const (
	SourceSentinel = "sentinel"
	SourceCron     = "cron"
)

// ErrUnknownNudge is matched by errors for a nudge ID with no dispatched record.
var ErrUnknownNudge = errors.New("feedback: unknown nudge id")

// Record is one line of feedback.jsonl.
type Record struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	NudgeID  string    `json:"nudge_id"`
	Topic    string    `json:"topic,omitempty"`
	Session  string    `json:"session,omitempty"`
	Action   string    `json:"action,omitempty"`
	Priority string    `json:"priority,omitempty"`
	Source   string    `json:"source,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	// Content is what the owner was sent (dispatched records only), cut
	// to MaxContent bytes so the log stays cheap to scan.
	Content string `json:"content,omitempty"`
}

// MaxContent bounds Record.Content.
const MaxContent = 280

// IsVerdict reports whether event is accepted, dismissed or neutral.
func IsVerdict(event string) bool {
	return event == EventAccepted || event == EventDismissed || event == EventNeutral
}

// Options are the tracker's dependencies.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// KeepDays is how many days of records the daily trim keeps (default 30).
	KeepDays int
	// MaxTailBytes bounds how far AcceptanceRate reads back (default 8 MiB).
	MaxTailBytes int64
	// LockTimeout bounds waiting for a peer process (default 10s).
	LockTimeout time.Duration
}

// Tracker appends and reads sentinel/feedback.jsonl. Appends and the trim
// share an flock on path+".lock" so processes never interleave or lose lines.
type Tracker struct {
	path string
	jl   *jsonl.File
	lock *statefile.Lock
	clk  clock.Clock
	log  *slog.Logger
	opts Options

	mu        sync.Mutex
	trimmedOn string // local date of the last trim check by this process
}

// NewTracker returns a tracker for path (created on first append).
func NewTracker(path string, opts Options) *Tracker {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeepDays <= 0 {
		opts.KeepDays = 30
	}
	if opts.MaxTailBytes <= 0 {
		opts.MaxTailBytes = 8 << 20
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 10 * time.Second
	}
	return &Tracker{path: path, jl: jsonl.New(path, opts.Logger), lock: statefile.NewLock(path + ".lock"),
		clk: opts.Clock, log: opts.Logger, opts: opts}
}

// Path is the JSONL file's path.
func (t *Tracker) Path() string { return t.path }

func (t *Tracker) withLock(ctx context.Context, fn func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, t.opts.LockTimeout)
	err := t.lock.Acquire(lctx)
	cancel()
	if err != nil {
		return err
	}
	defer t.lock.Release()
	return fn()
}

// Append writes rec as one line, stamping Time when zero.
func (t *Tracker) Append(ctx context.Context, rec Record) error {
	if rec.NudgeID == "" {
		return errors.New("feedback: append: empty nudge id")
	}
	if rec.Event != EventDispatched && !IsVerdict(rec.Event) {
		return fmt.Errorf("feedback: append: unknown event %q", rec.Event)
	}
	if rec.Time.IsZero() {
		rec.Time = t.clk.Now()
	}
	rec.Content = textcut.Cut(rec.Content, MaxContent)
	rec.Time = rec.Time.UTC()
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("feedback: encode %s: %w", rec.NudgeID, err)
	}
	return t.withLock(ctx, func() error {
		if err := jsonl.AppendLine(t.path, line); err != nil {
			return fmt.Errorf("feedback: %w", err)
		}
		return nil
	})
}

// RecordDispatched logs a delivered nudge. Cron deliveries are written as
// neutral dispatches (source "cron") and never count toward the rate.
func (t *Tracker) RecordDispatched(ctx context.Context, rec Record) error {
	rec.Event = EventDispatched
	if rec.Source == "" {
		rec.Source = SourceSentinel
	}
	return t.Append(ctx, rec)
}

// RecordVerdict logs the owner's verdict on a dispatched nudge, copying its
// topic, action and source. An unknown ID yields an error matching
// ErrUnknownNudge.
func (t *Tracker) RecordVerdict(ctx context.Context, nudgeID, verdict, session, reason string) (Record, error) {
	if !IsVerdict(verdict) {
		return Record{}, fmt.Errorf("feedback: verdict %q: want accepted, dismissed or neutral", verdict)
	}
	d, ok, err := t.Lookup(nudgeID)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, fmt.Errorf("%w %q", ErrUnknownNudge, nudgeID)
	}
	rec := Record{
		Event: verdict, NudgeID: nudgeID, Topic: d.Topic, Session: session, Action: d.Action,
		Priority: d.Priority, Source: d.Source, Reason: reason,
	}
	if rec.Session == "" {
		rec.Session = d.Session
	}
	if err := t.Append(ctx, rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// scanBack visits records newest first. Torn and malformed lines are
// skipped (with a warning, once).
func (t *Tracker) scanBack(maxBytes int64, fn func(r Record) bool) error {
	err := t.jl.Backward(maxBytes, func(line []byte) bool {
		var r Record
		if !t.jl.Decode(line, &r) {
			return true
		}
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	return nil
}

// AcceptanceRate is accepted / (accepted + dismissed) over verdicts newer
// than window, reading the file backwards only as far as needed. Neutral
// verdicts and anything from cron are excluded; samples counts the rest.
// A read error is logged and yields whatever was read (0, 0 at worst), so
// the policy simply does not retune.
func (t *Tracker) AcceptanceRate(window time.Duration) (rate float64, samples int) {
	cut := t.clk.Now().Add(-window)
	// Lines from several processes may be slightly out of order; read a
	// minute past the cut before stopping.
	stop := cut.Add(-time.Minute)
	var acc, dis int
	err := t.scanBack(t.opts.MaxTailBytes, func(r Record) bool {
		if r.Time.Before(stop) {
			return false
		}
		if r.Time.Before(cut) || r.Source == SourceCron {
			return true
		}
		switch r.Event {
		case EventAccepted:
			acc++
		case EventDismissed:
			dis++
		}
		return true
	})
	if err != nil {
		t.log.Warn("feedback: acceptance rate read failed", "path", t.path, "err", err)
	}
	samples = acc + dis
	if samples > 0 {
		rate = float64(acc) / float64(samples)
	}
	return rate, samples
}

// Lookup finds the dispatched record of nudgeID, newest first.
func (t *Tracker) Lookup(nudgeID string) (Record, bool, error) {
	var found Record
	ok := false
	err := t.scanBack(0, func(r Record) bool {
		if r.NudgeID == nudgeID && r.Event == EventDispatched {
			found, ok = r, true
			return false
		}
		return true
	})
	return found, ok, err
}

// Recent returns up to n records, newest first.
func (t *Tracker) Recent(n int) ([]Record, error) {
	out := []Record{}
	if n <= 0 {
		return out, nil
	}
	err := t.scanBack(0, func(r Record) bool {
		out = append(out, r)
		return len(out) < n
	})
	return out, err
}

// NudgeSummary is one dispatched nudge with the owner's latest verdict.
type NudgeSummary struct {
	Record
	Verdict       string    `json:"verdict,omitempty"`
	VerdictAt     time.Time `json:"verdict_at,omitzero"`
	VerdictReason string    `json:"verdict_reason,omitempty"`
}

// Nudges returns up to n dispatched nudges, newest first, each with its
// latest verdict (empty when the owner has not reacted yet).
func (t *Tracker) Nudges(n int) ([]NudgeSummary, error) {
	out := []NudgeSummary{}
	if n <= 0 {
		return out, nil
	}
	latest := map[string]Record{} // newest verdict per nudge, seen before its dispatch
	err := t.scanBack(0, func(r Record) bool {
		if r.Event != EventDispatched {
			if _, seen := latest[r.NudgeID]; !seen {
				latest[r.NudgeID] = r
			}
			return true
		}
		s := NudgeSummary{Record: r}
		if v, ok := latest[r.NudgeID]; ok {
			s.Verdict, s.VerdictAt, s.VerdictReason = v.Event, v.Time, v.Reason
		}
		out = append(out, s)
		return len(out) < n
	})
	return out, err
}

// NudgesSince returns the nudges dispatched since t, newest first, each
// with its latest verdict. It reads the file backwards and stops at the
// first record a minute older than t (lines from several processes may be
// slightly out of order) or after maxBytes (0: the tracker's
// MaxTailBytes), so its cost is bounded by the window, not the file.
func (t *Tracker) NudgesSince(since time.Time, maxBytes int64) ([]NudgeSummary, error) {
	if maxBytes <= 0 {
		maxBytes = t.opts.MaxTailBytes
	}
	stop := since.Add(-time.Minute)
	out := []NudgeSummary{}
	latest := map[string]Record{}
	err := t.scanBack(maxBytes, func(r Record) bool {
		if r.Time.Before(stop) {
			return false
		}
		if r.Event != EventDispatched {
			if _, seen := latest[r.NudgeID]; !seen {
				latest[r.NudgeID] = r
			}
			return true
		}
		if r.Time.Before(since) {
			return true
		}
		s := NudgeSummary{Record: r}
		if v, ok := latest[r.NudgeID]; ok {
			s.Verdict, s.VerdictAt, s.VerdictReason = v.Event, v.Time, v.Reason
		}
		out = append(out, s)
		return true
	})
	return out, err
}

// MaybeTrim drops records older than KeepDays, at most once per local day
// per process, and only rewrites the file when its first record is old
// enough to go. It reports whether the file was rewritten.
func (t *Tracker) MaybeTrim(ctx context.Context) (bool, error) {
	now := t.clk.Now()
	today := now.Format(time.DateOnly)
	t.mu.Lock()
	done := t.trimmedOn == today
	t.mu.Unlock()
	if done {
		return false, nil
	}
	cut := now.Add(-time.Duration(t.opts.KeepDays) * 24 * time.Hour)
	trimmed := false
	err := t.withLock(ctx, func() error {
		var err error
		trimmed, err = t.trimLocked(cut)
		return err
	})
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	t.trimmedOn = today
	t.mu.Unlock()
	return trimmed, nil
}

func (t *Tracker) trimLocked(cut time.Time) (bool, error) {
	old := true
	err := t.jl.Forward(func(line []byte) bool {
		var first Record
		if t.jl.Decode(line, &first) {
			old = first.Time.Before(cut)
			return false
		}
		return true // a torn first line: look at the next
	})
	if err != nil || !old {
		return false, err
	}
	if _, err := os.Stat(t.path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	tmp, err := statefile.CreateTemp(t.path)
	if err != nil {
		return false, fmt.Errorf("feedback: trim: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	kept, dropped := 0, 0
	err = t.jl.Forward(func(line []byte) bool {
		var r Record
		if !t.jl.Decode(line, &r) {
			return true
		}
		if r.Time.Before(cut) {
			dropped++
			return true
		}
		// A whole line is kept as written (fields of a newer build
		// survive); one recovered from torn bytes is re-encoded alone.
		b := line
		if !json.Valid(line) {
			var err error
			if b, err = json.Marshal(r); err != nil {
				return true
			}
		}
		w.Write(b)
		w.WriteByte('\n')
		kept++
		return true
	})
	if err != nil {
		tmp.Close()
		return false, fmt.Errorf("feedback: trim read: %w", err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("feedback: trim write: %w", err)
	}
	if err := statefile.CommitTemp(tmp, t.path, 0o600); err != nil {
		return false, fmt.Errorf("feedback: trim: %w", err)
	}
	t.log.Info("feedback: trimmed", "path", t.path, "kept", kept, "dropped", dropped)
	return true, nil
}
