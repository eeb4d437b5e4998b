package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
)

// OriginUnknown is charged for a call whose context carries no
// llm.CallTag: a call site that forgot to say who it calls for.
const OriginUnknown = "unknown"

// ErrPaused refuses an ambient model call while a cap it counts toward is
// reached.
var ErrPaused = errors.New("usage: ambient work paused by a usage cap")

// Pause is a reached cap that stopped ambient work until ResumeAt.
type Pause struct {
	CapStatus
	// Origin is the ambient origin whose call found the cap reached.
	Origin string    `json:"origin"`
	At     time.Time `json:"at"`
}

// Notice is the message the owner is sent once per pause.
func (p Pause) Notice(loc *time.Location) string {
	used, limit := fmt.Sprintf("%.0f", p.Used), fmt.Sprintf("%.0f tokens", p.Limit)
	if p.Unit == UnitUSD {
		used, limit = fmt.Sprintf("$%.2f", p.Used), fmt.Sprintf("$%.2f", p.Limit)
	}
	return fmt.Sprintf("Usage cap reached: %s used %s of its %s %s cap. Ambient work it covers (%s) is paused until %s; "+
		"your chats and the reminders you scheduled still run. See `raven usage`.",
		p.Scope, used, limit, periodly(p.Period), coveredBy(p.Scope), p.ResumeAt.In(orLocal(loc)).Format("Mon 2 Jan 15:04 MST"))
}

func periodly(period string) string {
	if period == PeriodDay {
		return "daily"
	}
	return "monthly"
}

func coveredBy(scope string) string {
	if IsAmbient(scope) {
		return scope
	}
	return strings.Join(AmbientOrigins, ", ")
}

func orLocal(loc *time.Location) *time.Location {
	if loc == nil {
		return time.Local
	}
	return loc
}

// MeterOptions configure a Meter.
type MeterOptions struct {
	Store  *Store
	Config Config
	// Location is the owner's time zone: days and months start there.
	Location *time.Location
	Clock    clock.Clock
	Logger   *slog.Logger
	// OnPause is told once per pause (per scope and period, across
	// processes sharing raven.db): the runtime notifies the owner and
	// logs an event.
	OnPause func(context.Context, Pause)
}

// Meter records every call of the providers it wraps and holds ambient
// calls to the caps.
type Meter struct {
	o   MeterOptions
	clk clock.Clock
	log *slog.Logger

	mu sync.Mutex
	// pending are the tick calls per origin whose tick has not ended.
	pending map[string][]int64
	// paused caches reached caps until they resume: spend only grows
	// within a period, so no query is needed to refuse again.
	paused map[string]Pause
	// spend is the period's spend per origin and model, read from the
	// database at most every SpendRefresh and kept current with this
	// process's own calls in between: a gate is a map walk, not a query.
	spend       map[[2]string]*spend
	spendAt     time.Time
	spendPeriod periods
}

// SpendRefresh bounds how stale the spend of other processes sharing
// raven.db (a chat beside the gateway) may be in a gate.
const SpendRefresh = 5 * time.Minute

// NewMeter returns a Meter over o.Store.
func NewMeter(o MeterOptions) (*Meter, error) {
	if o.Store == nil {
		return nil, errors.New("usage: meter needs a store")
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Location = orLocal(o.Location)
	return &Meter{o: o, clk: o.Clock, log: o.Logger, pending: map[string][]int64{}, paused: map[string]Pause{}}, nil
}

// Wrap returns p recording through m; nil stays nil (no model).
func (m *Meter) Wrap(p llm.Provider) llm.Provider {
	if p == nil {
		return nil
	}
	return &metered{m: m, inner: p}
}

// SettleTick ends the tick of origin: when it delivered nothing, its
// decision calls are marked silent.
func (m *Meter) SettleTick(ctx context.Context, origin string, delivered bool) {
	m.mu.Lock()
	ids := m.pending[origin]
	delete(m.pending, origin)
	m.mu.Unlock()
	if delivered || len(ids) == 0 {
		return
	}
	if err := m.o.Store.MarkSilent(context.WithoutCancel(ctx), ids); err != nil {
		m.log.Warn("usage: silent tick not marked", "origin", origin, "err", err)
	}
}

// Gate returns nil when an origin's call may go out, else an error
// wrapping ErrPaused. Requested origins always may (fail open); an ambient
// one may not while a cap it counts toward is reached (fail closed, also
// when the spend cannot be read).
func (m *Meter) Gate(ctx context.Context, origin string) error {
	if !IsAmbient(origin) || len(m.o.Config.Caps) == 0 {
		return nil
	}
	now := m.clk.Now()
	m.mu.Lock()
	for k, p := range m.paused {
		switch {
		case !now.Before(p.ResumeAt):
			delete(m.paused, k)
			m.log.Info("usage: cap period over; ambient work resumes", "scope", p.Scope, "period", p.Period)
		case pauses(p.Scope, origin):
			m.mu.Unlock()
			return pausedError(p)
		}
	}
	m.mu.Unlock()
	sts, err := m.capStatuses(ctx, now)
	if err != nil {
		m.log.Warn("usage: spend unreadable; ambient call refused", "origin", origin, "err", err)
		return fmt.Errorf("%w: spend unreadable: %v", ErrPaused, err)
	}
	for _, st := range sts {
		if !st.Reached || !pauses(st.Scope, origin) {
			continue
		}
		p := Pause{CapStatus: st, Origin: origin, At: now}
		m.mu.Lock()
		m.paused[st.Scope+"/"+st.Period+"/"+st.Unit] = p
		m.mu.Unlock()
		first, err := m.o.Store.claimPause(context.WithoutCancel(ctx), st.Scope, st.Period+"/"+st.Unit, st.PeriodStart, now)
		if err != nil {
			m.log.Warn("usage: pause not recorded", "scope", st.Scope, "err", err)
		}
		if first {
			m.log.Warn("usage: cap reached; ambient work paused", "scope", st.Scope, "period", st.Period, "unit", st.Unit,
				"used", st.Used, "limit", st.Limit, "resume_at", st.ResumeAt)
			if m.o.OnPause != nil {
				m.o.OnPause(context.WithoutCancel(ctx), p)
			}
		}
		return pausedError(p)
	}
	return nil
}

// capStatuses evaluates the caps on the cached spend, refreshed from the
// database when a new day starts or SpendRefresh passed.
func (m *Meter) capStatuses(ctx context.Context, now time.Time) ([]CapStatus, error) {
	p := periodsAt(now, m.o.Location)
	m.mu.Lock()
	fresh := m.spend != nil && p == m.spendPeriod && now.Sub(m.spendAt) < SpendRefresh && !now.Before(m.spendAt)
	m.mu.Unlock()
	if !fresh {
		rows, err := m.o.Store.periodSpend(ctx, p.dayStart, p.monthStart)
		if err != nil {
			return nil, err
		}
		idx := make(map[[2]string]*spend, len(rows))
		for i := range rows {
			idx[[2]string{rows[i].origin, rows[i].model}] = &rows[i]
		}
		m.mu.Lock()
		m.spend, m.spendAt, m.spendPeriod = idx, now, p
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := make([]spend, 0, len(m.spend))
	for _, sp := range m.spend {
		rows = append(rows, *sp)
	}
	return evaluate(m.o.Config, rows, p), nil
}

// count adds a call this process recorded to the cached spend.
func (m *Meter) count(c Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.spendPeriod
	if m.spend == nil || c.At.Before(p.monthStart) || !c.At.Before(p.nextMonth) {
		return
	}
	k := [2]string{c.Origin, c.Model}
	sp := m.spend[k]
	if sp == nil {
		sp = &spend{origin: c.Origin, model: c.Model}
		m.spend[k] = sp
	}
	sp.month.add(c.Tokens)
	if !c.At.Before(p.dayStart) && c.At.Before(p.nextDay) {
		sp.day.add(c.Tokens)
	}
}

func pausedError(p Pause) error {
	return fmt.Errorf("%w: %s %s %s cap reached (%.0f of %.0f); resumes %s", ErrPaused, p.Scope, periodly(p.Period), p.Unit,
		p.Used, p.Limit, p.ResumeAt.Format(time.RFC3339))
}

func (m *Meter) addPending(origin string, id int64) {
	m.mu.Lock()
	m.pending[origin] = append(m.pending[origin], id)
	m.mu.Unlock()
}

// metered is a provider whose every call is gated and recorded.
type metered struct {
	m     *Meter
	inner llm.Provider
}

func (w *metered) Name() string { return w.inner.Name() }

func (w *metered) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	tag, _ := llm.CallTagFrom(ctx)
	if tag.Origin == "" {
		tag.Origin = OriginUnknown
	}
	if err := w.m.Gate(ctx, tag.Origin); err != nil {
		return nil, err
	}
	at, start := w.m.clk.Now(), time.Now()
	resp, err := w.inner.Chat(ctx, req)
	model, provider := modelOf(w.inner.Name(), req.Model)
	c := Call{At: at, Origin: tag.Origin, Model: model, Provider: provider, Conversation: tag.Conversation,
		Duration: time.Since(start), OK: err == nil, Tick: tag.Tick}
	if resp != nil {
		u := resp.Usage
		c.Tokens = Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens), Cached: int64(u.CachedTokens)}
	}
	if err != nil {
		c.Error = err.Error()
	}
	id, rerr := w.m.o.Store.Record(context.WithoutCancel(ctx), c)
	switch {
	case rerr != nil:
		w.m.log.Warn("usage: model call not recorded", "origin", tag.Origin, "err", rerr)
	case tag.Tick:
		w.m.addPending(tag.Origin, id)
	}
	w.m.count(c)
	return resp, err
}

// modelOf names the model as configured ("openai/gpt-4o-mini") and its
// provider; a request naming its own model overrides the provider's.
func modelOf(name, reqModel string) (model, provider string) {
	provider, m, ok := strings.Cut(name, "/")
	if !ok {
		provider, _, _ = strings.Cut(name, ":") // scripted:PATH
		return name, provider
	}
	if reqModel != "" {
		m = reqModel
	}
	return provider + "/" + m, provider
}
