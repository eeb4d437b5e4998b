package executor

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// DeferSection is the defer manager's section of state.json.
const DeferSection = "defer"

// Defer defaults.
const (
	DefaultDeferIdle    = 10 * time.Minute
	DefaultDeferMaxWait = 4 * time.Hour
	DefaultDeferPoll    = time.Minute
)

// DeferOptions are the DeferManager's dependencies.
type DeferOptions struct {
	Store Store
	Gate  Gate
	// Dispatch delivers a settled nudge (the dispatcher's Dispatch: policy
	// check, post, record).
	Dispatch func(ctx context.Context, n Nudge) Result
	// Targets resolves a nudge's session the way Dispatch will (the
	// dispatcher's Targets), so the registration check and the idle test
	// see the session it will reach. Nil: the nudge's own session.
	Targets TargetsFunc
	// LastActivity reports when session last saw a message; false when
	// unknown (the session then counts as idle since registration).
	LastActivity func(ctx context.Context, session string) (time.Time, bool)
	// IdleThreshold: a session idle this long has settled (default 10m).
	IdleThreshold time.Duration
	// MaxWait: a deferred nudge not dispatched by then expires (default 4h).
	MaxWait time.Duration
	// PollInterval of Run (default 1m).
	PollInterval time.Duration
	// OnDispatch observes every attempted dispatch (instrumentation only;
	// not persisted).
	OnDispatch func(e DeferEntry, r Result)
	Clock      clock.Clock
	Logger     *slog.Logger
}

// DeferEntry is one deferred nudge.
type DeferEntry struct {
	ID           string    `json:"id"`
	Nudge        Nudge     `json:"nudge"`
	Condition    string    `json:"condition"`
	RegisteredAt time.Time `json:"registered_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	Attempts     int       `json:"attempts,omitempty"`
}

type deferState struct {
	Entries []DeferEntry `json:"entries"`
}

// DeferManager holds nudges until their session settles. The queue is a
// priority heap persisted in the shared store, so it survives a restart and
// is shared with a peer process.
type DeferManager struct {
	o DeferOptions
}

// NewDeferManager returns a defer manager.
func NewDeferManager(opts DeferOptions) (*DeferManager, error) {
	if opts.Store == nil || opts.Dispatch == nil {
		return nil, fmt.Errorf("executor: defer manager needs a state store and a dispatch function")
	}
	if opts.IdleThreshold <= 0 {
		opts.IdleThreshold = DefaultDeferIdle
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultDeferMaxWait
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultDeferPoll
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &DeferManager{o: opts}, nil
}

// Register checks the policy (to fail fast) and queues n until its session
// settles. The policy is checked again at dispatch time.
func (m *DeferManager) Register(ctx context.Context, n Nudge, condition string) Result {
	if strings.TrimSpace(n.Message) == "" {
		return denied(LayerInput, "empty nudge message")
	}
	n.Action = policy.ActionDefer
	v := policy.Verdict{Allow: true}
	if m.o.Gate != nil {
		req := n.request()
		for _, s := range m.sessions(n.Session) {
			req.SessionKey = s
			if v = m.o.Gate.Check(ctx, req); !v.Allow {
				return Result{Verdict: v}
			}
		}
	}
	now := m.o.Clock.Now().UTC()
	e := DeferEntry{ID: newID("def"), Nudge: n, Condition: condition, RegisteredAt: now, ExpiresAt: now.Add(m.o.MaxWait)}
	err := m.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		st, err := loadDefer(tx)
		if err != nil {
			return err
		}
		st.Entries = append(st.Entries, e)
		return tx.Put(DeferSection, st)
	})
	if err != nil {
		return Result{Verdict: v, Error: fmt.Sprintf("register defer: %v", err)}
	}
	return Result{Verdict: v, Queued: true, Note: fmt.Sprintf("deferred until %s is idle %s (max until %s): %s", orAny(n.Session), m.o.IdleThreshold, e.ExpiresAt.Format(time.RFC3339), condition)}
}

// sessions are the sessions a nudge for session reaches; session itself
// when nothing resolves it (the dispatcher then reports the missing target).
func (m *DeferManager) sessions(session string) []string {
	var out []string
	if m.o.Targets != nil {
		for _, t := range m.o.Targets(session) {
			out = append(out, t.Key())
		}
	}
	if len(out) == 0 {
		out = []string{session}
	}
	return out
}

func orAny(s string) string {
	if s == "" {
		return "the owner"
	}
	return s
}

// Poll expires overdue entries and dispatches settled ones, highest
// priority first. Settledness asks LastActivity (the session store), so it
// is computed from a snapshot outside the shared state lock; the entries
// are then claimed (removed) by ID under the lock, so a peer process that
// claimed one first keeps it. One that fails to deliver goes back on the
// heap until it expires.
func (m *DeferManager) Poll(ctx context.Context) []Result {
	now := m.o.Clock.Now()
	var snapshot []DeferEntry
	err := m.o.Store.View(ctx, func(tx *statefile.Tx) error {
		raw, ok := tx.Raw(DeferSection)
		if !ok || len(raw) < 16 { // `{"entries":[]}`: nothing deferred
			return nil
		}
		st, err := loadDefer(tx)
		snapshot = st.Entries
		return err
	})
	if err != nil {
		m.o.Logger.Warn("sentinel: defer queue unavailable", "err", err)
		return nil
	}
	if len(snapshot) == 0 {
		return nil
	}
	expired := map[string]bool{}
	settled := map[string]bool{}
	for _, e := range snapshot {
		switch {
		case !now.Before(e.ExpiresAt):
			expired[e.ID] = true
		case m.settled(ctx, e, now):
			settled[e.ID] = true
		}
	}
	if len(expired) == 0 && len(settled) == 0 {
		return nil
	}
	var ready []DeferEntry
	err = m.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		ready = ready[:0]
		st, err := loadDefer(tx)
		if err != nil {
			return err
		}
		keep := st.Entries[:0:0]
		for _, e := range st.Entries {
			switch {
			case expired[e.ID]:
				m.o.Logger.Info("sentinel: deferred nudge expired before its session settled", "id", e.ID, "session", e.Nudge.Session, "registered_at", e.RegisteredAt)
			case settled[e.ID]:
				ready = append(ready, e)
			default:
				keep = append(keep, e)
			}
		}
		if len(keep) == len(st.Entries) {
			return nil // a peer claimed them all first
		}
		return tx.Put(DeferSection, deferState{Entries: keep})
	})
	if err != nil {
		m.o.Logger.Warn("sentinel: defer queue unavailable", "err", err)
		return nil
	}
	h := deferHeap(ready)
	heap.Init(&h)
	results := make([]Result, 0, len(ready))
	var retry []DeferEntry
	for h.Len() > 0 {
		e := heap.Pop(&h).(DeferEntry)
		r := m.o.Dispatch(ctx, e.Nudge)
		if r.Note == "" {
			r.Note = "deferred " + e.ID + " dispatched after its session settled"
		}
		results = append(results, r)
		if m.o.OnDispatch != nil {
			m.o.OnDispatch(e, r)
		}
		if !r.Delivered {
			e.Attempts++
			retry = append(retry, e)
			m.o.Logger.Info("sentinel: deferred nudge not delivered; kept until it expires", "id", e.ID, "layer", r.Verdict.Layer, "err", r.Error)
		}
	}
	if len(retry) > 0 {
		// Claimed entries must go back even when shutdown cancelled ctx
		// mid-dispatch, or they would be lost.
		if err := m.o.Store.Update(context.WithoutCancel(ctx), func(tx *statefile.Tx) error {
			st, err := loadDefer(tx)
			if err != nil {
				return err
			}
			st.Entries = append(st.Entries, retry...)
			return tx.Put(DeferSection, st)
		}); err != nil {
			m.o.Logger.Error("sentinel: could not requeue deferred nudges", "err", err, "count", len(retry))
		}
	}
	return results
}

func (m *DeferManager) settled(ctx context.Context, e DeferEntry, now time.Time) bool {
	last, known := e.RegisteredAt, false
	if m.o.LastActivity != nil {
		for _, s := range m.sessions(e.Nudge.Session) {
			if s == "" {
				continue
			}
			if t, ok := m.o.LastActivity(ctx, s); ok && (!known || t.After(last)) {
				last, known = t, true
			}
		}
	}
	return now.Sub(last) >= m.o.IdleThreshold
}

// Pending lists the deferred nudges in dispatch order.
func (m *DeferManager) Pending(ctx context.Context) ([]DeferEntry, error) {
	var st deferState
	err := m.o.Store.View(ctx, func(tx *statefile.Tx) error {
		var err error
		st, err = loadDefer(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	h := deferHeap(st.Entries)
	heap.Init(&h)
	out := make([]DeferEntry, 0, h.Len())
	for h.Len() > 0 {
		out = append(out, heap.Pop(&h).(DeferEntry))
	}
	return out, nil
}

// Run polls until ctx ends.
func (m *DeferManager) Run(ctx context.Context) {
	for {
		if err := clock.Sleep(ctx, m.o.Clock, m.o.PollInterval); err != nil {
			return
		}
		m.Poll(ctx)
	}
}

func loadDefer(tx *statefile.Tx) (deferState, error) {
	var st deferState
	_, err := tx.Get(DeferSection, &st)
	return st, err
}

func rank(p policy.Priority) int {
	switch p {
	case policy.PriorityHigh:
		return 2
	case policy.PriorityMedium:
		return 1
	}
	return 0
}

// deferHeap orders by priority, then registration time.
type deferHeap []DeferEntry

func (h deferHeap) Len() int { return len(h) }
func (h deferHeap) Less(i, j int) bool {
	if ri, rj := rank(h[i].Nudge.Priority), rank(h[j].Nudge.Priority); ri != rj {
		return ri > rj
	}
	return h[i].RegisteredAt.Before(h[j].RegisteredAt)
}
func (h deferHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deferHeap) Push(x any)   { *h = append(*h, x.(DeferEntry)) }
func (h *deferHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
