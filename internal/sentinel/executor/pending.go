package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// Option kinds an ActionExecutor can run.
const (
	KindReply = "reply" // send Reply through the injector
	KindSpawn = "spawn" // spawn a micro-agent for Task
	KindTool  = "tool"  // run the agent's tool Tool with Args
)

// Pending decision states.
const (
	StateOpen            = "open"
	StateAwaitingConfirm = "awaiting_confirm"
	// StateExecuting: a pick is running; the menu closes only once it
	// succeeded and goes back to its previous state otherwise.
	StateExecuting  = "executing"
	StateDone       = "done"
	StateCancelled  = "cancelled"
	StateSuperseded = "superseded"
)

// Option is one numbered choice of a discovery menu.
type Option struct {
	Title  string `json:"title"`
	Reason string `json:"reason,omitempty"`
	Kind   string `json:"kind"`
	Reply  string `json:"reply,omitempty"`
	Task   string `json:"task,omitempty"`
	// Tool and Args name the agent tool a KindTool option runs.
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// PendingDecision is a menu waiting for the owner's pick.
type PendingDecision struct {
	ID       string          `json:"id"`
	Session  string          `json:"session"`
	Title    string          `json:"title"`
	Topic    string          `json:"topic,omitempty"`
	Priority policy.Priority `json:"priority,omitempty"`
	Options  []Option        `json:"options"`
	State    string          `json:"state"`
	Picked   int             `json:"picked,omitempty"` // 1-based
	// Resume is the state an executing pick returns the menu to when it
	// fails (or its process died: see pickClaimTimeout).
	Resume string `json:"resume,omitempty"`
	// Shown lists the sessions the menu was actually delivered to (a
	// forward channel, the surface that drained it from the outbox). Once
	// it was shown anywhere, it is answerable there and only there: the
	// owner picks where they read it, not where it was planned.
	Shown     []string  `json:"shown,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Active reports whether pd still waits for a pick or a confirmation.
func (pd PendingDecision) Active(now time.Time) bool {
	st := pd.effectiveState(now)
	return (st == StateOpen || st == StateAwaitingConfirm) && now.Before(pd.ExpiresAt)
}

// AnswerableIn reports whether a pick typed in session answers pd.
func (pd PendingDecision) AnswerableIn(session string) bool {
	if len(pd.Shown) == 0 {
		return pd.Session == session
	}
	return slices.Contains(pd.Shown, session)
}

// ExtraPendingDecision is the spine.Message extra naming the menu a
// message shows, so whoever finally shows it (the outbox on attach) can
// make it answerable there.
const ExtraPendingDecision = "pending_decision"

// ExtraNudgeID is the spine.Message extra carrying the nudge id of a
// message whose fire was charged before it was posted (a spawn's result).
const ExtraNudgeID = "nudge_id"

// pickClaimTimeout bounds how long a pick may hold its menu as executing:
// a claim older than that belongs to a process that died mid-pick, and the
// menu is open again. It outlasts any pick (a tool call, a spawn start).
const pickClaimTimeout = 15 * time.Minute

func (pd PendingDecision) effectiveState(now time.Time) string {
	if pd.State == StateExecuting && now.Sub(pd.UpdatedAt) >= pickClaimTimeout {
		return pd.Resume
	}
	return pd.State
}

// RenderMenu is the user-facing menu: numbered options with one-line
// reasons and how to answer.
func RenderMenu(pd PendingDecision) string {
	var b strings.Builder
	if pd.Title != "" {
		b.WriteString(pd.Title)
		b.WriteString("\n\n")
	}
	for i, o := range pd.Options {
		fmt.Fprintf(&b, "%d. %s", i+1, o.Title)
		if o.Reason != "" {
			fmt.Fprintf(&b, " — %s", o.Reason)
		}
		if o.Kind == KindTool && o.Tool != "" {
			// The owner sees what a pick will run, not only its title.
			fmt.Fprintf(&b, " (runs %s)", o.Tool)
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nReply with a number (or /pick N) to choose.")
	return b.String()
}

// ErrNoPendingDecision is returned for an unknown or no longer active decision.
var ErrNoPendingDecision = errors.New("executor: no such active pending decision")

// Refusals of pending_decisions.json: a corrupt file has been moved aside,
// a newer one is left untouched.
var (
	ErrPendingCorrupt = errors.New("executor: pending decisions file is corrupt")
	ErrPendingNewer   = errors.New("executor: pending decisions file written by a newer raven")
)

// Pending decision defaults.
const (
	DefaultPendingTTL = 12 * time.Hour
	pendingRetention  = 7 * 24 * time.Hour
	pendingVersion    = 1
)

// PendingDecisionStore keeps discovery menus in pending_decisions.json,
// shared by processes under a flock with atomic replace.
type PendingDecisionStore struct {
	path string
	lock *statefile.Lock
	ttl  time.Duration
	clk  clock.Clock
	mu   sync.Mutex
}

// NewPendingDecisionStore returns a store at path; ttl <= 0 uses the default.
func NewPendingDecisionStore(path string, ttl time.Duration, clk clock.Clock) *PendingDecisionStore {
	if ttl <= 0 {
		ttl = DefaultPendingTTL
	}
	if clk == nil {
		clk = clock.Real()
	}
	return &PendingDecisionStore{path: path, lock: statefile.NewLock(path + ".lock"), ttl: ttl, clk: clk}
}

type pendingFile struct {
	Version   int               `json:"version"`
	Decisions []PendingDecision `json:"decisions"`
}

func (s *PendingDecisionStore) update(ctx context.Context, fn func(f *pendingFile, now time.Time) (bool, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.lock.Acquire(lctx); err != nil {
		return err
	}
	defer s.lock.Release()
	now := s.clk.Now()
	f, err := s.load(now)
	if err != nil {
		return err
	}
	changed, err := fn(&f, now)
	if err != nil || !changed {
		return err
	}
	kept := f.Decisions[:0]
	for _, d := range f.Decisions {
		if d.Active(now) || now.Sub(d.CreatedAt) < pendingRetention {
			kept = append(kept, d)
		}
	}
	f.Decisions = kept
	f.Version = pendingVersion
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("executor: encode %s: %w", s.path, err)
	}
	return statefile.WriteAtomic(s.path, append(data, '\n'), 0o600)
}

func (s *PendingDecisionStore) load(now time.Time) (pendingFile, error) {
	var f pendingFile
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("executor: read %s: %w", s.path, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		moved, merr := statefile.MoveAside(s.path, now)
		if merr != nil {
			return f, fmt.Errorf("%w: %s (%v) could not be moved aside: %w", ErrPendingCorrupt, s.path, err, merr)
		}
		return pendingFile{}, fmt.Errorf("%w: %s (%v); moved aside to %s", ErrPendingCorrupt, s.path, err, moved)
	}
	if f.Version > pendingVersion {
		return f, fmt.Errorf("%w: %s has version %d, this raven supports %d", ErrPendingNewer, s.path, f.Version, pendingVersion)
	}
	return f, nil
}

// Put stores pd as the session's open menu, superseding any earlier one.
func (s *PendingDecisionStore) Put(ctx context.Context, pd PendingDecision) (PendingDecision, error) {
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		if pd.ID == "" {
			pd.ID = newID("pd")
		}
		if pd.CreatedAt.IsZero() {
			pd.CreatedAt = now.UTC()
		}
		if pd.ExpiresAt.IsZero() {
			pd.ExpiresAt = pd.CreatedAt.Add(s.ttl)
		}
		pd.State = StateOpen
		for i := range f.Decisions {
			if d := &f.Decisions[i]; d.AnswerableIn(pd.Session) && d.Active(now) {
				d.State = StateSuperseded
				d.UpdatedAt = now.UTC()
			}
		}
		f.Decisions = append(f.Decisions, pd)
		return true, nil
	})
	return pd, err
}

// Active returns the newest active decision answerable in session.
func (s *PendingDecisionStore) Active(ctx context.Context, session string) (PendingDecision, bool, error) {
	var out PendingDecision
	found := false
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		for i := len(f.Decisions) - 1; i >= 0; i-- {
			if d := f.Decisions[i]; d.AnswerableIn(session) && d.Active(now) {
				d.State = d.effectiveState(now)
				out, found = d, true
				break
			}
		}
		return false, nil
	})
	return out, found, err
}

// Show records that the active decision id is being shown in session:
// from now on a pick typed there answers it, and any other active menu
// answerable there is superseded (the owner's "2" means the menu they
// see last). Showing a decision that is no longer active is
// ErrNoPendingDecision.
func (s *PendingDecisionStore) Show(ctx context.Context, id, session string) error {
	return s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		d, err := findDecision(f, id)
		if err != nil {
			return false, err
		}
		if !d.Active(now) {
			return false, fmt.Errorf("%w: %s is %s", ErrNoPendingDecision, id, d.effectiveState(now))
		}
		for i := range f.Decisions {
			if o := &f.Decisions[i]; o.ID != id && o.AnswerableIn(session) && o.Active(now) {
				o.State, o.UpdatedAt = StateSuperseded, now.UTC()
			}
		}
		if slices.Contains(d.Shown, session) {
			return true, nil
		}
		d.Shown, d.UpdatedAt = append(d.Shown, session), now.UTC()
		return true, nil
	})
}

// Unshow undoes Show for a delivery that failed.
func (s *PendingDecisionStore) Unshow(ctx context.Context, id, session string) error {
	return s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		d, err := findDecision(f, id)
		if err != nil {
			return false, err
		}
		i := slices.Index(d.Shown, session)
		if i < 0 {
			return false, nil
		}
		d.Shown, d.UpdatedAt = slices.Delete(d.Shown, i, i+1), now.UTC()
		return true, nil
	})
}

// Transition moves an active decision to state with the picked option.
func (s *PendingDecisionStore) Transition(ctx context.Context, id, state string, picked int) (PendingDecision, error) {
	var out PendingDecision
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		for i := range f.Decisions {
			d := &f.Decisions[i]
			if d.ID != id {
				continue
			}
			if !d.Active(now) {
				return false, fmt.Errorf("%w: %s is %s", ErrNoPendingDecision, id, d.State)
			}
			d.State, d.UpdatedAt = state, now.UTC()
			if picked > 0 {
				d.Picked = picked
			}
			out = *d
			return true, nil
		}
		return false, fmt.Errorf("%w: %s", ErrNoPendingDecision, id)
	})
	return out, err
}

// Claim marks an active decision's pick as executing, so a second message
// (or process) cannot run it twice while it runs; Settle ends the claim.
func (s *PendingDecisionStore) Claim(ctx context.Context, id string, picked int) (PendingDecision, error) {
	var out PendingDecision
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		d, err := findDecision(f, id)
		if err != nil {
			return false, err
		}
		if !d.Active(now) {
			return false, fmt.Errorf("%w: %s is %s", ErrNoPendingDecision, id, d.State)
		}
		d.Resume = d.effectiveState(now)
		d.State, d.Picked, d.UpdatedAt = StateExecuting, picked, now.UTC()
		out = *d
		return true, nil
	})
	return out, err
}

// Settle ends a Claim: done closes the menu, otherwise it returns to the
// state it was claimed from, so the owner can retry the pick.
func (s *PendingDecisionStore) Settle(ctx context.Context, id string, done bool) (PendingDecision, error) {
	var out PendingDecision
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		d, err := findDecision(f, id)
		if err != nil {
			return false, err
		}
		if d.State != StateExecuting {
			return false, fmt.Errorf("%w: %s is %s, not executing", ErrNoPendingDecision, id, d.State)
		}
		d.State = d.Resume
		if done {
			d.State = StateDone
		}
		d.Resume, d.UpdatedAt = "", now.UTC()
		out = *d
		return true, nil
	})
	return out, err
}

func findDecision(f *pendingFile, id string) (*PendingDecision, error) {
	for i := range f.Decisions {
		if f.Decisions[i].ID == id {
			return &f.Decisions[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoPendingDecision, id)
}

// List returns every retained decision, oldest first.
func (s *PendingDecisionStore) List(ctx context.Context) ([]PendingDecision, error) {
	var out []PendingDecision
	err := s.update(ctx, func(f *pendingFile, now time.Time) (bool, error) {
		out = append(out, f.Decisions...)
		return false, nil
	})
	return out, err
}
