package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

// Store is the shared state file (policy, injector and defer manager use one
// instance, so every mutation goes through one lock).
type Store interface {
	Update(ctx context.Context, fn func(tx *statefile.Tx) error) error
	View(ctx context.Context, fn func(tx *statefile.Tx) error) error
}

// InjectorSection is the injector's section of state.json.
const InjectorSection = "injector"

// Injector defaults.
const (
	DefaultInjectTTL = 6 * time.Hour
	DefaultInjectCap = 3
	// DefaultInflightTimeout bounds how long an inject may ride a reply
	// that was never settled (its process died mid-turn) before it is
	// requeued. It outlasts a turn waiting on ask_user's 10-minute budget.
	DefaultInflightTimeout = 30 * time.Minute

	// storeTimeout bounds a modifier's or settle's wait for the state
	// lock: the seam has no context, and a reply must not hang on it.
	storeTimeout = 5 * time.Second
)

// InjectorOptions are the NudgeInjector's dependencies.
type InjectorOptions struct {
	Store Store
	Gate  Gate
	// TTL drops entries not consumed in time (default 6h).
	TTL time.Duration
	// Cap bounds each session's queue; the oldest is evicted beyond it
	// (default 3).
	Cap int
	// InflightTimeout requeues injects taken by a reply that was never
	// settled (default 30m).
	InflightTimeout time.Duration
	// OnDelivered sees each inject once Settle learned its reply was
	// delivered.
	OnDelivered DeliveredFunc
	Clock       clock.Clock
	Logger      *slog.Logger
}

// InjectEntry is one queued inject. NudgeID is the fire the policy charged
// when it was queued; entries queued before injects were charged at queue
// time have none and are charged when their reply is delivered.
type InjectEntry struct {
	ID       string    `json:"id"`
	Nudge    Nudge     `json:"nudge"`
	QueuedAt time.Time `json:"queued_at"`
	NudgeID  string    `json:"nudge_id,omitempty"`
}

// InflightEntry is an inject taken by a reply whose delivery is not yet
// known. Owner is the injector instance that took it.
type InflightEntry struct {
	InjectEntry
	Owner   string    `json:"owner"`
	TakenAt time.Time `json:"taken_at"`
}

type injectorState struct {
	Queues   map[string][]InjectEntry   `json:"queues"`
	InFlight map[string][]InflightEntry `json:"in_flight,omitempty"`
}

// NudgeInjector queues messages that ride the agent's next reply in a
// session. Its Modify method is the agent loop's response modifier and
// Settle (or SettleTurn) its delivery report.
type NudgeInjector struct {
	o     InjectorOptions
	owner string

	mu   sync.Mutex
	mine map[string][]InjectEntry // session -> taken by this instance, unsettled
}

// NewInjector returns an injector.
func NewInjector(opts InjectorOptions) (*NudgeInjector, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("executor: injector needs a state store")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultInjectTTL
	}
	if opts.Cap <= 0 {
		opts.Cap = DefaultInjectCap
	}
	if opts.InflightTimeout <= 0 {
		opts.InflightTimeout = DefaultInflightTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	owner := newID("inj" + strconv.Itoa(os.Getpid()))
	return &NudgeInjector{o: opts, owner: owner, mine: map[string][]InjectEntry{}}, nil
}

// Queue checks the policy, charges it and queues n for its session's next
// reply. Charging at queue time is what keeps the next tick from queueing
// the same inject again (dedup, quotas and cooldowns see it); the same
// content already waiting in the session's queue (or riding a reply) is
// never queued twice. The fire is re-checked when the inject rides a reply.
func (in *NudgeInjector) Queue(ctx context.Context, n Nudge) Result {
	if n.Session == "" {
		return denied(LayerInput, "nudge_inject needs a target session")
	}
	if strings.TrimSpace(n.Message) == "" {
		return denied(LayerInput, "empty nudge message")
	}
	n.Action = policy.ActionInject
	key := policy.ContentKey(n.Message)
	var dup InjectEntry
	err := in.o.Store.View(ctx, func(tx *statefile.Tx) error {
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		in.prune(&st, in.o.Clock.Now(), false)
		dup, _ = findContent(st, n.Session, key)
		return nil
	})
	if err != nil {
		return Result{Error: fmt.Sprintf("queue inject: %v", err)}
	}
	if dup.ID != "" {
		return alreadyQueued(dup)
	}
	req := n.request()
	v := policy.Verdict{Allow: true}
	var nudgeID string
	if in.o.Gate != nil {
		if v = in.o.Gate.Check(ctx, req); !v.Allow {
			return Result{Verdict: v}
		}
		if nudgeID, err = in.o.Gate.RecordFired(ctx, req); err != nil {
			return Result{Verdict: v, Error: fmt.Sprintf("queue inject: charge: %v", err)}
		}
	}
	now := in.o.Clock.Now()
	entry := InjectEntry{ID: newID("inj"), Nudge: n, QueuedAt: now.UTC(), NudgeID: nudgeID}
	var evicted int
	err = in.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		in.pruneLocked(&st, now)
		if dup, _ = findContent(st, n.Session, key); dup.ID != "" {
			return nil // a peer queued it between our look and the charge
		}
		q := append(st.Queues[n.Session], entry)
		if over := len(q) - in.o.Cap; over > 0 {
			evicted = over
			q = q[over:]
		}
		st.Queues[n.Session] = q
		return tx.Put(InjectorSection, st)
	})
	if err != nil {
		return Result{Verdict: v, NudgeID: nudgeID, Error: fmt.Sprintf("queue inject: %v", err)}
	}
	if dup.ID != "" {
		in.o.Logger.Warn("sentinel: inject queued by a peer meanwhile; this charge is spent", "session", n.Session, "nudge_id", nudgeID, "queued", dup.ID)
		return alreadyQueued(dup)
	}
	if evicted > 0 {
		in.o.Logger.Info("sentinel: inject queue full; oldest evicted", "session", n.Session, "evicted", evicted)
	}
	return Result{Verdict: v, Queued: true, NudgeID: nudgeID, Note: "queued for the next reply in " + n.Session}
}

func alreadyQueued(e InjectEntry) Result {
	return Result{Verdict: policy.Verdict{Allow: true}, Queued: true, NudgeID: e.NudgeID, Note: "already queued as " + e.ID + "; not queued twice"}
}

// findContent returns the session's queued or in-flight entry with the
// same content key.
func findContent(st injectorState, session string, key uint64) (InjectEntry, bool) {
	for _, e := range st.Queues[session] {
		if policy.ContentKey(e.Nudge.Message) == key {
			return e, true
		}
	}
	for _, f := range st.InFlight[session] {
		if policy.ContentKey(f.Nudge.Message) == key {
			return f.InjectEntry, true
		}
	}
	return InjectEntry{}, false
}

// Modify is the response modifier func(sessionKey, content string) string:
// it takes the session's pending injects and appends them to the reply.
// Taking them under the shared lock means two processes never both carry
// one inject. The taken entries stay in flight (persisted) until Settle
// learns whether the reply was delivered: only then is the fire charged,
// and an undelivered reply puts them back. A failure leaves the reply
// untouched.
func (in *NudgeInjector) Modify(sessionKey, content string) string {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	taken, err := in.take(ctx, sessionKey)
	if err != nil {
		in.o.Logger.Warn("sentinel: inject queue unavailable; reply sent without injects", "session", sessionKey, "err", err)
		return content
	}
	if len(taken) == 0 {
		return content
	}
	in.mu.Lock()
	in.mine[sessionKey] = append(in.mine[sessionKey], taken...)
	in.mu.Unlock()
	var b strings.Builder
	b.WriteString(strings.TrimRight(content, "\n"))
	for _, e := range taken {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(e.Nudge.Message)
	}
	return b.String()
}

// Settle ends the in-flight injects this injector put on session's last
// reply: delivered charges the policy and reports each as dispatched;
// otherwise they go back to the front of the queue for the next reply.
// The gateway calls it from the spine's turn-done observer.
func (in *NudgeInjector) Settle(session string, delivered bool) {
	in.mu.Lock()
	taken := in.mine[session]
	delete(in.mine, session)
	in.mu.Unlock()
	if len(taken) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ids := make(map[string]bool, len(taken))
	for _, e := range taken {
		ids[e.ID] = true
	}
	var requeued int
	err := in.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		now := in.o.Clock.Now()
		in.pruneLocked(&st, now)
		var back []InjectEntry
		kept := st.InFlight[session][:0]
		for _, f := range st.InFlight[session] {
			switch {
			case !ids[f.ID]:
				kept = append(kept, f)
			case !delivered:
				back = append(back, f.InjectEntry)
			}
		}
		setOrDelete(st.InFlight, session, kept)
		q := st.Queues[session]
		if delivered {
			// A peer may have requeued an entry whose turn outlived the
			// in-flight bound; it rode this reply, so it must not ride
			// another.
			q = slices.DeleteFunc(q, func(e InjectEntry) bool { return ids[e.ID] })
		} else {
			requeued = len(back)
			q = append(back, q...)
			if over := len(q) - in.o.Cap; over > 0 {
				q = q[over:]
			}
		}
		setOrDelete(st.Queues, session, q)
		return tx.Put(InjectorSection, st)
	})
	if err != nil {
		in.o.Logger.Error("sentinel: could not settle in-flight injects", "session", session, "delivered", delivered, "err", err)
	}
	if !delivered {
		if requeued > 0 {
			in.o.Logger.Info("sentinel: reply not delivered; injects requeued", "session", session, "count", requeued)
		}
		return
	}
	now := in.o.Clock.Now()
	for _, e := range taken {
		req := e.Nudge.request()
		id := e.NudgeID
		if id == "" && in.o.Gate != nil {
			// Queued before injects were charged at queue time.
			var err error
			if id, err = in.o.Gate.RecordFired(ctx, req); err != nil {
				in.o.Logger.Error("sentinel: inject delivered but fire not recorded", "err", err)
			}
		}
		if in.o.OnDelivered != nil {
			in.o.OnDelivered(ctx, Delivery{NudgeID: id, Action: req.Action, Session: session, Content: e.Nudge.Message, Topic: e.Nudge.Topic, Priority: e.Nudge.Priority, At: now})
		}
	}
}

// SettleTurn is Settle as a spine turn-done observer. Only turns whose
// output is not system-generated ran the modifier; delivered is whether
// the reply reached the owner.
func (in *NudgeInjector) SettleTurn(req spine.TurnRequest, delivered bool) {
	if req.Origin.SystemGenerated() {
		return
	}
	in.Settle(req.Conversation(), delivered)
}

func setOrDelete[T any](m map[string][]T, k string, v []T) {
	if len(v) == 0 {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// take moves the session's injects that still pass the policy into flight.
// The policy is asked again because time passed since they were queued: a
// dismissal cooldown, quiet hours or a topic rejection that began meanwhile
// holds an inject back (it stays queued until its TTL). The check runs
// between a look at the queue and the claim, outside the state lock the
// policy itself takes.
func (in *NudgeInjector) take(ctx context.Context, session string) ([]InjectEntry, error) {
	now := in.o.Clock.Now()
	var queued []InjectEntry
	err := in.o.Store.View(ctx, func(tx *statefile.Tx) error {
		raw, ok := tx.Raw(InjectorSection)
		if !ok || len(raw) < 16 { // `{"queues":{}}` and friends: nothing queued
			return nil
		}
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		in.prune(&st, now, false)
		queued = st.Queues[session]
		return nil
	})
	if err != nil || len(queued) == 0 {
		return nil, err
	}
	ok := make(map[string]bool, len(queued))
	for _, e := range queued {
		if in.o.Gate == nil {
			ok[e.ID] = true
			continue
		}
		req := e.Nudge.request()
		req.Charged = e.NudgeID != ""
		if v := in.o.Gate.Check(ctx, req); v.Allow {
			ok[e.ID] = true
		} else {
			in.o.Logger.Info("sentinel: queued inject held back by the policy", "session", session, "id", e.ID, "layer", v.Layer, "reason", v.Reason)
		}
	}
	if len(ok) == 0 {
		return nil, nil
	}
	var taken []InjectEntry
	err = in.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		taken = taken[:0]
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		pruned := in.pruneLocked(&st, now)
		var keep []InjectEntry
		for _, e := range st.Queues[session] {
			if ok[e.ID] {
				taken = append(taken, e)
			} else {
				keep = append(keep, e)
			}
		}
		if len(taken) == 0 && !pruned {
			return nil
		}
		setOrDelete(st.Queues, session, keep)
		for _, e := range taken {
			st.InFlight[session] = append(st.InFlight[session], InflightEntry{InjectEntry: e, Owner: in.owner, TakenAt: now.UTC()})
		}
		return tx.Put(InjectorSection, st)
	})
	return taken, err
}

// Pending lists the queued injects per session (for status and tests);
// injects riding a reply not yet settled are not listed.
func (in *NudgeInjector) Pending(ctx context.Context) (map[string][]InjectEntry, error) {
	var st injectorState
	err := in.o.Store.View(ctx, func(tx *statefile.Tx) error {
		var err error
		st, err = loadInjector(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	in.prune(&st, in.o.Clock.Now(), false)
	return st.Queues, nil
}

// pruneLocked drops expired entries and requeues in-flight ones whose
// reply was never settled within the in-flight bound (their process
// crashed or lost the store), and reports whether anything changed.
func (in *NudgeInjector) pruneLocked(st *injectorState, now time.Time) bool {
	return in.prune(st, now, true)
}

// prune is pruneLocked; logged says whether to log what it drops (a read
// that will not write its result back stays quiet, so one expiry is
// logged once, by the write that persists it).
func (in *NudgeInjector) prune(st *injectorState, now time.Time, logged bool) bool {
	changed := false
	for s, fs := range st.InFlight {
		kept := fs[:0]
		var back []InjectEntry
		for _, f := range fs {
			if now.Sub(f.TakenAt) < in.o.InflightTimeout {
				kept = append(kept, f)
				continue
			}
			changed = true
			back = append(back, f.InjectEntry)
			if logged {
				in.o.Logger.Warn("sentinel: in-flight inject never settled; requeued", "session", s, "id", f.ID, "owner", f.Owner, "taken_at", f.TakenAt)
			}
		}
		setOrDelete(st.InFlight, s, kept)
		if len(back) > 0 {
			st.Queues[s] = append(back, st.Queues[s]...)
		}
	}
	for s, q := range st.Queues {
		kept := q[:0]
		for _, e := range q {
			if now.Sub(e.QueuedAt) < in.o.TTL {
				kept = append(kept, e)
			} else {
				changed = true
				if logged {
					in.o.Logger.Info("sentinel: inject expired unconsumed; its charge is spent", "session", s, "id", e.ID, "nudge_id", e.NudgeID)
				}
			}
		}
		if over := len(kept) - in.o.Cap; over > 0 {
			changed = true
			kept = kept[over:]
		}
		setOrDelete(st.Queues, s, kept)
	}
	return changed
}

func loadInjector(tx *statefile.Tx) (injectorState, error) {
	var st injectorState
	if _, err := tx.Get(InjectorSection, &st); err != nil {
		return st, err
	}
	if st.Queues == nil {
		st.Queues = map[string][]InjectEntry{}
	}
	if st.InFlight == nil {
		st.InFlight = map[string][]InflightEntry{}
	}
	return st, nil
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
