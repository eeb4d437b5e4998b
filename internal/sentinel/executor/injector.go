package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
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
)

// InjectorOptions are the NudgeInjector's dependencies.
type InjectorOptions struct {
	Store Store
	Gate  Gate
	// TTL drops entries not consumed in time (default 6h).
	TTL time.Duration
	// Cap bounds each session's queue; the oldest is evicted beyond it
	// (default 3).
	Cap         int
	OnDelivered DeliveredFunc
	Clock       clock.Clock
	Logger      *slog.Logger
}

// InjectEntry is one queued inject.
type InjectEntry struct {
	ID       string    `json:"id"`
	Nudge    Nudge     `json:"nudge"`
	QueuedAt time.Time `json:"queued_at"`
}

type injectorState struct {
	Queues map[string][]InjectEntry `json:"queues"`
}

// NudgeInjector queues messages that ride the agent's next reply in a
// session. Its Modify method is the agent loop's response modifier.
type NudgeInjector struct {
	o InjectorOptions
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
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &NudgeInjector{o: opts}, nil
}

// Queue checks the policy and queues n for its session's next reply. The
// fire is recorded only when a reply actually carries it.
func (in *NudgeInjector) Queue(ctx context.Context, n Nudge) Result {
	if n.Session == "" {
		return denied(LayerInput, "nudge_inject needs a target session")
	}
	if strings.TrimSpace(n.Message) == "" {
		return denied(LayerInput, "empty nudge message")
	}
	n.Action = policy.ActionInject
	v := policy.Verdict{Allow: true}
	if in.o.Gate != nil {
		if v = in.o.Gate.Check(ctx, n.request()); !v.Allow {
			return Result{Verdict: v}
		}
	}
	now := in.o.Clock.Now()
	entry := InjectEntry{ID: newID("inj"), Nudge: n, QueuedAt: now.UTC()}
	var evicted int
	err := in.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		in.pruneLocked(&st, now)
		q := append(st.Queues[n.Session], entry)
		if over := len(q) - in.o.Cap; over > 0 {
			evicted = over
			q = q[over:]
		}
		st.Queues[n.Session] = q
		return tx.Put(InjectorSection, st)
	})
	if err != nil {
		return Result{Verdict: v, Error: fmt.Sprintf("queue inject: %v", err)}
	}
	if evicted > 0 {
		in.o.Logger.Info("sentinel: inject queue full; oldest evicted", "session", n.Session, "evicted", evicted)
	}
	return Result{Verdict: v, Queued: true, Note: "queued for the next reply in " + n.Session}
}

// Modify is the response modifier func(sessionKey, content string) string:
// it pops the session's pending injects and appends them to the reply.
// Popping under the shared lock means two processes never both deliver
// one inject, and a failure leaves the reply untouched.
func (in *NudgeInjector) Modify(sessionKey, content string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	taken, err := in.take(ctx, sessionKey)
	if err != nil {
		in.o.Logger.Warn("sentinel: inject queue unavailable; reply sent without injects", "session", sessionKey, "err", err)
		return content
	}
	if len(taken) == 0 {
		return content
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(content, "\n"))
	for _, e := range taken {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(e.Nudge.Message)
	}
	out := b.String()
	now := in.o.Clock.Now()
	for _, e := range taken {
		req := e.Nudge.request()
		id := ""
		if in.o.Gate != nil {
			if id, err = in.o.Gate.RecordFired(ctx, req); err != nil {
				in.o.Logger.Error("sentinel: inject delivered but fire not recorded", "err", err)
			}
		}
		if in.o.OnDelivered != nil {
			in.o.OnDelivered(ctx, Delivery{NudgeID: id, Action: req.Action, Session: sessionKey, Content: e.Nudge.Message, Topic: e.Nudge.Topic, Priority: e.Nudge.Priority, At: now})
		}
	}
	return out
}

func (in *NudgeInjector) take(ctx context.Context, session string) ([]InjectEntry, error) {
	var taken []InjectEntry
	now := in.o.Clock.Now()
	err := in.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		raw, ok := tx.Raw(InjectorSection)
		if !ok || len(raw) < 16 { // `{"queues":{}}` and friends: nothing queued
			return nil
		}
		st, err := loadInjector(tx)
		if err != nil {
			return err
		}
		pruned := in.pruneLocked(&st, now)
		taken = st.Queues[session]
		if len(taken) == 0 && !pruned {
			return nil
		}
		delete(st.Queues, session)
		return tx.Put(InjectorSection, st)
	})
	return taken, err
}

// Pending lists the queued injects per session (for status and tests).
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
	in.pruneLocked(&st, in.o.Clock.Now())
	return st.Queues, nil
}

// pruneLocked drops expired entries and reports whether any went.
func (in *NudgeInjector) pruneLocked(st *injectorState, now time.Time) bool {
	changed := false
	for s, q := range st.Queues {
		kept := q[:0]
		for _, e := range q {
			if now.Sub(e.QueuedAt) < in.o.TTL {
				kept = append(kept, e)
			} else {
				changed = true
				in.o.Logger.Info("sentinel: inject expired unconsumed", "session", s, "id", e.ID)
			}
		}
		if len(kept) == 0 {
			delete(st.Queues, s)
		} else {
			st.Queues[s] = kept
		}
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
	return st, nil
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
