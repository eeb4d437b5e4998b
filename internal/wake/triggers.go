package wake

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

// TriggerKind names what an operator asked a running process to do.
type TriggerKind string

const (
	// TriggerDiscovery asks the Sentinel runner for a task-discovery run.
	TriggerDiscovery TriggerKind = "discovery"
	// TriggerTick asks the Sentinel runner for an immediate tick.
	TriggerTick TriggerKind = "tick"
	// TriggerHeartbeat asks for an early heartbeat (RequestWakeNow).
	TriggerHeartbeat TriggerKind = "heartbeat"
)

// Valid reports whether k is a known kind.
func (k TriggerKind) Valid() bool {
	return k == TriggerDiscovery || k == TriggerTick || k == TriggerHeartbeat
}

// Trigger is one request written by a CLI process for a running consumer.
type Trigger struct {
	ID        string      `json:"id"`
	Kind      TriggerKind `json:"kind"`
	Reason    string      `json:"reason,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	PID       int         `json:"pid"`
}

// triggersVersion is the schema version of triggers.json.
const triggersVersion = 1

type triggersFile struct {
	Version  int       `json:"version"`
	Triggers []Trigger `json:"triggers"`
}

// Limits that keep a runaway script from growing the file without bound.
const (
	MaxPendingTriggers = 256
	MaxTriggerReason   = 500
	maxTriggersFile    = 1 << 20
	triggerLockTimeout = 10 * time.Second
)

// TriggerError is bad input to Add.
type TriggerError struct {
	Field string
	Msg   string
}

func (e *TriggerError) Error() string { return "wake: trigger " + e.Field + ": " + e.Msg }

// ErrTooManyTriggers is returned by Add when MaxPendingTriggers are waiting:
// nothing is consuming them.
var ErrTooManyTriggers = errors.New("wake: too many pending triggers (is a consumer running?)")

// CorruptError reports a triggers file that could not be parsed. It has been
// moved aside to MovedTo (kept for inspection) and nothing else was done;
// the next call starts from an empty file.
type CorruptError struct {
	Path    string
	MovedTo string
	Err     error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wake: %s is corrupt (%v); moved aside to %s", e.Path, e.Err, e.MovedTo)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// TriggerStore is the file-based IPC (sentinel/triggers.json) between CLI
// processes that ask and the running process that acts: every operation
// holds an exclusive flock on "<path>.lock" and replaces the file atomically,
// so a trigger is never lost to a concurrent writer and never consumed twice.
type TriggerStore struct {
	path string
	lock *statefile.Lock
	clk  clock.Clock
	log  *slog.Logger
}

// NewTriggerStore returns the store for path (config.Paths.Triggers()).
func NewTriggerStore(path string, c clock.Clock, log *slog.Logger) *TriggerStore {
	if c == nil {
		c = clock.Real()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TriggerStore{path: path, lock: statefile.NewLock(path + ".lock"), clk: c, log: log}
}

// Path is the triggers file.
func (s *TriggerStore) Path() string { return s.path }

// Add appends a trigger for the consumer and returns it.
func (s *TriggerStore) Add(ctx context.Context, kind TriggerKind, reason string) (Trigger, error) {
	if !kind.Valid() {
		return Trigger{}, &TriggerError{Field: "kind", Msg: fmt.Sprintf("unknown kind %q (want discovery, tick or heartbeat)", kind)}
	}
	reason = strings.TrimSpace(reason)
	if len(reason) > MaxTriggerReason || !utf8.ValidString(reason) || strings.ContainsAny(reason, "\r\n") {
		return Trigger{}, &TriggerError{Field: "reason", Msg: fmt.Sprintf("must be one line of valid UTF-8, at most %d bytes", MaxTriggerReason)}
	}
	id, err := newTriggerID()
	if err != nil {
		return Trigger{}, err
	}
	t := Trigger{ID: id, Kind: kind, Reason: reason, CreatedAt: s.clk.Now().UTC(), PID: os.Getpid()}
	err = s.update(ctx, func(f *triggersFile) (bool, error) {
		if len(f.Triggers) >= MaxPendingTriggers {
			return false, ErrTooManyTriggers
		}
		f.Triggers = append(f.Triggers, t)
		return true, nil
	})
	if err != nil {
		return Trigger{}, fmt.Errorf("wake: add %s trigger: %w", kind, err)
	}
	return t, nil
}

// Drain removes and returns every pending trigger, oldest first. Each
// trigger is returned by exactly one Drain across all processes. Delivery is
// at most once: a consumer that crashes after Drain loses those triggers,
// which for "wake up early" requests is the safe side.
func (s *TriggerStore) Drain(ctx context.Context) ([]Trigger, error) {
	var out []Trigger
	err := s.update(ctx, func(f *triggersFile) (bool, error) {
		if len(f.Triggers) == 0 {
			return false, nil
		}
		out, f.Triggers = f.Triggers, nil
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wake: drain triggers: %w", err)
	}
	return out, nil
}

// Pending returns the waiting triggers without consuming them.
func (s *TriggerStore) Pending(ctx context.Context) ([]Trigger, error) {
	var out []Trigger
	err := s.update(ctx, func(f *triggersFile) (bool, error) {
		out = f.Triggers
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wake: read triggers: %w", err)
	}
	return out, nil
}

// Consume drains the store every interval and calls fn for each trigger,
// until ctx ends (then it returns nil). Failures are logged and retried on
// the next round; a corrupt file is moved aside and reported once.
func (s *TriggerStore) Consume(ctx context.Context, interval time.Duration, fn func(context.Context, Trigger)) error {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		ts, err := s.Drain(ctx)
		var ce *CorruptError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &ce):
			s.log.Error("triggers file was corrupt; moved aside", "path", ce.Path, "moved_to", ce.MovedTo, "err", ce.Err)
		case err != nil:
			s.log.Warn("draining triggers failed", "path", s.path, "err", err)
		}
		for _, t := range ts {
			if !t.Kind.Valid() {
				s.log.Warn("dropping trigger of unknown kind", "id", t.ID, "kind", t.Kind)
				continue
			}
			s.log.Info("trigger consumed", "id", t.ID, "kind", t.Kind, "reason", t.Reason, "from_pid", t.PID)
			fn(ctx, t)
		}
		if err := clock.Sleep(ctx, s.clk, interval); err != nil {
			return nil
		}
	}
}

// update runs fn on the file's content under the lock, writing it back when
// fn reports a change.
func (s *TriggerStore) update(ctx context.Context, fn func(*triggersFile) (bool, error)) error {
	lctx, cancel := context.WithTimeout(ctx, triggerLockTimeout)
	defer cancel()
	if err := s.lock.Acquire(lctx); err != nil {
		return err
	}
	defer s.lock.Release()
	f, err := s.read()
	if err != nil {
		return err
	}
	changed, err := fn(&f)
	if err != nil || !changed {
		return err
	}
	if f.Triggers == nil {
		f.Triggers = []Trigger{}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", s.path, err)
	}
	return statefile.WriteAtomic(s.path, append(data, '\n'), 0o600)
}

// read loads the file; the caller holds the lock.
func (s *TriggerStore) read() (triggersFile, error) {
	f := triggersFile{Version: triggersVersion}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read %s: %w", s.path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	f.Version = 0 // a file without a version field is not ours
	var perr error
	if len(data) > maxTriggersFile {
		perr = fmt.Errorf("file is larger than %d bytes", maxTriggersFile)
	} else if err := json.Unmarshal(data, &f); err != nil {
		perr = err
	} else if f.Version > triggersVersion {
		return f, fmt.Errorf("%s has schema version %d; this raven understands %d (upgrade raven)", s.path, f.Version, triggersVersion)
	} else if f.Version < 1 {
		perr = fmt.Errorf("missing or bad version %d", f.Version)
	}
	if perr == nil {
		return f, nil
	}
	moved, err := statefile.MoveAside(s.path, s.clk.Now())
	if err != nil {
		return f, fmt.Errorf("corrupt %s (%v), and moving it aside failed: %w", s.path, perr, err)
	}
	return f, &CorruptError{Path: s.path, MovedTo: moved, Err: perr}
}

func newTriggerID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("wake: trigger id: %w", err)
	}
	return "trg_" + hex.EncodeToString(b[:]), nil
}
