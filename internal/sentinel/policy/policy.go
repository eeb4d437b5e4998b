// Package policy is the Sentinel's NudgePolicy: the one anti-spam gate every
// proactive nudge, spawn and task-discovery menu passes before delivery.
package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

// Priority of a request; high may bypass some layers.
type Priority string

// Priorities.
const (
	PriorityLow    Priority = "low"
	PriorityMedium Priority = "medium"
	PriorityHigh   Priority = "high"
)

// Actions the policy distinguishes. Every action other than skip and
// spawn_agent is charged to the nudge quota line.
const (
	ActionSkip   = "skip"
	ActionSpawn  = "spawn_agent"
	ActionNudge  = "nudge"
	ActionInject = "nudge_inject"
	ActionDefer  = "nudge_defer"
	// ActionTool is a menu pick that runs one of the agent's tools; its
	// output is the owner's reply, so it is on the nudge line.
	ActionTool = "run_tool"
)

// Verdicts recorded by RecordOutcome.
const (
	VerdictAccepted  = "accepted"
	VerdictDismissed = "dismissed"
	VerdictNeutral   = "neutral"
)

// Layer names reported in Verdict.Layer, in check order.
const (
	LayerAction            = "action"
	LayerQuietHours        = "quiet_hours"
	LayerLearnedDND        = "learned_dnd"
	LayerPersonaDND        = "persona_dnd"
	LayerDayQuota          = "day_quota"
	LayerHourQuota         = "hour_quota"
	LayerSessionCooldown   = "session_cooldown"
	LayerDismissalCooldown = "dismissal_cooldown"
	LayerTopicReject       = "topic_reject_cooldown"
	LayerTopicAcceptance   = "topic_acceptance"
	LayerDedup             = "dedup"
	LayerTopicQuota        = "topic_quota"
	// LayerState is not a policy layer: the shared state could not be read,
	// and the policy fails closed.
	LayerState = "state"
)

// StateSection is the policy's section in the shared state store.
const StateSection = "policy"

// ErrUnknownVerdict is returned for a verdict other than accepted, dismissed
// or neutral.
var ErrUnknownVerdict = errors.New("policy: verdict must be accepted, dismissed or neutral")

// Request is one proposed delivery.
type Request struct {
	Action     string
	SessionKey string // "channel:chat_id"; empty skips the session cooldown
	Content    string // the message, or the spawn task
	Priority   Priority
	Topic      string // optional; derived from Content when empty
	// AlsoSessions are further sessions one delivery reached (a nudge
	// resolved to several outlets); RecordFired starts the session
	// cooldown on each of them too.
	AlsoSessions []string
	// Answer marks the owner's own answer to a menu the policy already
	// charged (a task-discovery pick): it is not a new nudge, so the
	// session cooldown and the per-topic quota stack, which pace
	// unsolicited nudges, neither deny it nor are charged by it.
	Answer bool
	// Charged marks a request whose fire is already in the ledger (an
	// inject charged when queued, re-checked when it rides a reply). The
	// layers that count fires — quotas, session cooldown, dedup — are
	// skipped so its own charge cannot deny it; the layers about the
	// owner's state (quiet hours, do-not-disturb, dismissal cooldown,
	// topic rejection and acceptance) still apply.
	Charged bool
}

// Verdict is Check's answer. Layer names the denying layer ("" if allowed).
type Verdict struct {
	Allow  bool   `json:"allow"`
	Layer  string `json:"layer,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Options are the policy's dependencies.
type Options struct {
	Clock clock.Clock
	// Store persists the ledger in its "policy" section; nil keeps it in
	// memory only.
	Store  *statefile.Store
	Logger *slog.Logger
	// Overrides is consulted on every Check (see PreferencesReader).
	Overrides func() Overrides
	// NewID mints nudge IDs (default "n-" + 16 random hex digits).
	NewID func() string
}

// Policy is the shared NudgePolicy. It is safe for concurrent use; with a
// Store it is also consistent across processes sharing the file.
type Policy struct {
	cfg   Config
	clk   clock.Clock
	store *statefile.Store
	log   *slog.Logger
	ovFn  func() Overrides
	newID func() string

	mu     sync.Mutex
	led    *ledger
	stored *stored // what the store's sections hold, as far as this process knows
}

// New returns a policy for cfg.
func New(cfg Config, opts Options) (*Policy, error) {
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	return &Policy{
		cfg: cfg, clk: opts.Clock, store: opts.Store, log: opts.Logger,
		ovFn: opts.Overrides, newID: opts.NewID, led: newLedger(), stored: newStored(),
	}, nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "n-" + hex.EncodeToString(b[:])
}

// Config returns the configuration the policy was built with.
func (p *Policy) Config() Config { return p.cfg }

// hydrateLocked refreshes the ledger from the store when the policy section
// changed since we last saw it (a cached stat otherwise).
func (p *Policy) hydrateLocked(ctx context.Context) error {
	if p.store == nil {
		return nil
	}
	return p.store.View(ctx, p.loadTx)
}

func (p *Policy) loadTx(tx *statefile.Tx) error {
	return p.stored.load(tx, p.led, &p.cfg, p.clk.Now())
}

// update runs mutate on a freshly hydrated ledger and writes it back.
func (p *Policy) updateLocked(ctx context.Context, mutate func()) error {
	if p.store == nil {
		mutate()
		return nil
	}
	err := p.store.Update(ctx, func(tx *statefile.Tx) error {
		if err := p.loadTx(tx); err != nil {
			return err
		}
		mutate()
		return p.stored.save(tx, p.led)
	})
	if err != nil {
		// Nothing may have landed: look at every section's revision next
		// time; those we put and the file lacks read as changed.
		p.stored.seen = 0
	}
	return err
}

func (p *Policy) overrides() (Overrides, bool) {
	if p.ovFn == nil {
		return Overrides{}, false
	}
	return p.ovFn(), true
}

func isSpawn(action string) bool { return action == ActionSpawn }

// Check runs the layers in order and returns the first denial. It charges
// nothing: call RecordFired after a successful delivery.
func (p *Policy) Check(ctx context.Context, req Request) Verdict {
	ov, hasOv := p.overrides()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.hydrateLocked(ctx); err != nil {
		p.log.Error("policy: cannot read shared state; denying", "err", err)
		return Verdict{Layer: LayerState, Reason: "shared state unavailable: " + err.Error()}
	}
	var ovp *Overrides
	if hasOv {
		ovp = &ov
	}
	return p.checkLocked(req, ovp, p.clk.Now())
}

func (p *Policy) checkLocked(req Request, ov *Overrides, now time.Time) Verdict {
	c := &p.cfg
	l := p.led
	lim := tighten(c, ov)
	high := req.Priority == PriorityHigh
	local := now.In(c.Location)
	ns := now.UnixNano()

	// 1. action
	if req.Action == "" || req.Action == ActionSkip {
		return Verdict{Layer: LayerAction, Reason: "action is skip"}
	}
	// 2. quiet hours; the high-priority bypass is withdrawn when the owner
	// keeps rejecting high-priority nudges.
	if c.QuietHours.Contains(local) || (ov != nil && ov.QuietHours != nil && ov.QuietHours.Contains(local)) {
		if !high || !p.highBypassLocked() {
			return Verdict{Layer: LayerQuietHours, Reason: "inside quiet hours " + p.quietLabel(ov)}
		}
	}
	// 2b. learned per-hour do-not-disturb.
	if !high && p.learnedDNDLocked(local.Hour()) {
		return Verdict{Layer: LayerLearnedDND, Reason: fmt.Sprintf("owner usually dismisses nudges at %02d:00", local.Hour())}
	}
	// 3. persona do-not-disturb windows.
	if !high {
		if w, ok := inWindows(c.PersonaDND, ov, local); ok {
			return Verdict{Layer: LayerPersonaDND, Reason: "inside do-not-disturb window " + w.Name + " " + w.String()}
		}
	}
	// 3b. topics the owner muted (preferences.json); no bypass, except the
	// owner's own menu pick: picking it is the owner unmuting it once.
	if v, ok := mutedTopic(ov, req); ok && !req.Answer {
		return v
	}
	// 4. per-day quota (hard cap, own line for spawn).
	times, dayQ := l.nudgeTimes, lim.dayQuota
	if isSpawn(req.Action) {
		times, dayQ = l.spawnTimes, lim.spawnDayQuota
	}
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, c.Location).UnixNano()
	if used := countSince(times, midnight); used >= dayQ && !req.Charged {
		return Verdict{Layer: LayerDayQuota, Reason: fmt.Sprintf("day quota used (%d/%d)", used, dayQ)}
	}
	// 5. per-hour quota scaled by the adaptive and weekend multipliers.
	if !high && !req.Charged {
		hourQ := p.hourQuotaLocked(lim, ov, local, req.Action)
		if used := countSince(times, ns-int64(time.Hour)+1); used >= hourQ {
			return Verdict{Layer: LayerHourQuota, Reason: fmt.Sprintf("hour quota used (%d/%d)", used, hourQ)}
		}
	}
	// 6. per-session cooldown (nudge line only).
	if req.SessionKey != "" && !isSpawn(req.Action) && !req.Answer && !req.Charged && lim.sessionCooldown > 0 {
		if last, ok := l.sessions[hashString(req.SessionKey)]; ok && ns-last < int64(lim.sessionCooldown) {
			return Verdict{Layer: LayerSessionCooldown, Reason: "session nudged " + time.Duration(ns-last).Round(time.Second).String() + " ago"}
		}
	}
	// 7. dismissal cooldown.
	if l.lastDismissal > 0 && ns-l.lastDismissal < int64(lim.dismissalCooldown) {
		return Verdict{Layer: LayerDismissalCooldown, Reason: "owner dismissed a nudge " + time.Duration(ns-l.lastDismissal).Round(time.Second).String() + " ago"}
	}
	ts := l.topics[topicHash(req.Topic, req.Content)]
	if ts != nil {
		if v, denied := p.topicGatesLocked(ts, ns); denied {
			return v
		}
	}
	if req.Charged {
		return Verdict{Allow: true} // 10 and 11 count fires
	}
	// 10. content de-duplication (and a cron fire on the same topic).
	win := int64(lim.dedupWindow)
	if last, ok := l.dedup[contentHash(req.Content)]; ok && ns-last < win {
		return Verdict{Layer: LayerDedup, Reason: "same content sent " + time.Duration(ns-last).Round(time.Second).String() + " ago"}
	}
	if ts != nil && ts.lastCron > 0 && ns-ts.lastCron < win {
		return Verdict{Layer: LayerDedup, Reason: fmt.Sprintf("a cron job covered topic %q %s ago", ts.tag, time.Duration(ns-ts.lastCron).Round(time.Second))}
	}
	if req.Answer {
		return Verdict{Allow: true}
	}
	// 11. rolling per-topic quota stack.
	if ts != nil {
		for _, q := range [3]struct {
			name  string
			span  time.Duration
			quota int
		}{{"hour", time.Hour, lim.topicHour}, {"day", 24 * time.Hour, lim.topicDay}, {"week", week, lim.topicWeek}} {
			if used := countSince(ts.fires, ns-int64(q.span)+1); used >= q.quota {
				return Verdict{Layer: LayerTopicQuota, Reason: fmt.Sprintf("topic %q %s quota used (%d/%d)", ts.tag, q.name, used, q.quota)}
			}
		}
	} else if lim.topicHour == 0 || lim.topicDay == 0 || lim.topicWeek == 0 {
		return Verdict{Layer: LayerTopicQuota, Reason: "topic quota is zero"}
	}
	return Verdict{Allow: true}
}

// topicGatesLocked runs layers 8 (weighted topic hard-reject cooldown) and
// 9 (topic acceptance-rate gate).
func (p *Policy) topicGatesLocked(ts *topicState, ns int64) (Verdict, bool) {
	c := &p.cfg
	{
		// 8. weighted topic hard-reject cooldown.
		if until, score := p.rejectUntilLocked(ts, ns); ns < until {
			return Verdict{Layer: LayerTopicReject, Reason: fmt.Sprintf("topic %q rejected (score %.2f) until %s", ts.tag, score, time.Unix(0, until).In(c.Location).Format(time.DateTime))}, true
		}
		// 9. topic acceptance-rate gate.
		if n := ts.verdicts.samples(); n >= c.TopicGateMinSamples && n > 0 && ts.verdicts.rate() < c.TopicGateMinRate {
			return Verdict{Layer: LayerTopicAcceptance, Reason: fmt.Sprintf("topic %q accepted %.0f%% of %d", ts.tag, 100*ts.verdicts.rate(), n)}, true
		}
	}
	return Verdict{}, false
}

func (p *Policy) quietLabel(ov *Overrides) string {
	s := p.cfg.QuietHours.String()
	if ov != nil && ov.QuietHours != nil {
		s += " + " + ov.QuietHours.String()
	}
	return s
}

func inWindows(base []DayWindow, ov *Overrides, t time.Time) (DayWindow, bool) {
	for _, w := range base {
		if w.Contains(t) {
			return w, true
		}
	}
	if ov != nil {
		for _, w := range ov.DND {
			if w.Contains(t) {
				return w, true
			}
		}
	}
	return DayWindow{}, false
}

func (p *Policy) highBypassLocked() bool {
	h := p.led.high
	return h.samples() < p.cfg.QuietBypassMinSamples || h.rate() >= p.cfg.QuietBypassMinAcceptance
}

func (p *Policy) learnedDNDLocked(hour int) bool {
	if !p.cfg.LearnedDND {
		return false
	}
	h := p.led.hours[hour]
	return h.samples() >= p.cfg.LearnedDNDMinSamples && h.samples() > 0 && h.rate() <= p.cfg.LearnedDNDMaxAcceptance
}

func isWeekend(t time.Time) bool { return t.Weekday() == time.Saturday || t.Weekday() == time.Sunday }

// hourQuotaLocked is the base quota × adaptive multiplier × weekend factor,
// never below 1 unless the base is 0, and never above an owner's cap.
func (p *Policy) hourQuotaLocked(lim limits, ov *Overrides, local time.Time, action string) int {
	if isSpawn(action) {
		return lim.spawnHourQuota
	}
	base := p.cfg.HourQuota
	if base == 0 || lim.hourQuota == 0 {
		return 0
	}
	f := p.led.multiplier
	if isWeekend(local) {
		f *= lim.weekendFactor
	}
	q := max(1, int(math.Floor(float64(base)*f+1e-9)))
	if ov != nil && ov.HourQuota != nil && *ov.HourQuota < q {
		q = *ov.HourQuota
	}
	return q
}

func (p *Policy) rejectUntilLocked(ts *topicState, ns int64) (until int64, score float64) {
	c := &p.cfg
	from := ns - int64(c.TopicRejectWindow)
	var last int64
	for _, r := range ts.rejects {
		if r.at >= from {
			score += r.w
			last = max(last, r.at)
		}
	}
	if score < c.TopicRejectThreshold || last == 0 {
		return 0, score
	}
	return last + int64(float64(c.TopicRejectCooldown)*math.Min(score, c.TopicRejectMaxFactor)), score
}

// RecordFired charges a delivered request to the ledger and returns the
// nudge ID that correlates feedback. Call it only after delivery succeeded.
func (p *Policy) RecordFired(ctx context.Context, req Request) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	topic := req.Topic
	if topic == "" {
		topic = DeriveTopic(req.Content)
	}
	pr := req.Priority
	if pr == "" {
		pr = PriorityLow
	}
	rec := fireRec{
		ID: p.newID(), At: now.UTC(), Action: req.Action, Session: req.SessionKey, Also: req.AlsoSessions,
		Topic: topic, Hash: contentHash(req.Content), Priority: pr,
	}
	if req.Answer {
		rec.Source = sourceAnswer
	}
	if err := p.updateLocked(ctx, func() { p.led.addFire(rec, &p.cfg, now) }); err != nil {
		return rec.ID, fmt.Errorf("policy: record fire %s: %w", rec.ID, err)
	}
	return rec.ID, nil
}

// ContentKey is the key the dedup layer compares content by: case,
// punctuation and spacing differences do not make a message new. The
// injector's queue de-duplicates by it too.
func ContentKey(content string) uint64 { return contentHash(content) }

// RecordCronFire marks topic (derived from content when empty) as covered
// by a cron delivery, so the Sentinel does not nudge about it within the
// dedup window. It does not use the Sentinel's quotas; the matching
// feedback record is written as neutral by the caller.
func (p *Policy) RecordCronFire(ctx context.Context, topic, content string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	if topic == "" {
		topic = DeriveTopic(content)
	}
	rec := fireRec{
		ID: p.newID(), At: now.UTC(), Action: actionCron, Topic: topic,
		Hash: contentHash(content), Source: sourceCron,
	}
	if err := p.updateLocked(ctx, func() { p.led.addFire(rec, &p.cfg, now) }); err != nil {
		return fmt.Errorf("policy: record cron fire on %q: %w", topic, err)
	}
	return nil
}

// RecordOutcome feeds a verdict (accepted, dismissed, neutral) for a nudge
// ID — or, when no fire has that ID, for a topic tag — into the dismissal
// cooldown, the topic statistics and the learned do-not-disturb hours.
func (p *Policy) RecordOutcome(ctx context.Context, nudgeIDOrTopic, verdict string) error {
	switch verdict {
	case VerdictAccepted, VerdictDismissed, VerdictNeutral:
	default:
		return fmt.Errorf("%w (got %q)", ErrUnknownVerdict, verdict)
	}
	if nudgeIDOrTopic == "" {
		return errors.New("policy: record outcome: empty nudge ID")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	return p.updateLocked(ctx, func() {
		o := outcomeRec{At: now.UTC(), Verdict: verdict, Topic: nudgeIDOrTopic, Hour: now.In(p.cfg.Location).Hour()}
		if f, ok := p.led.findFire(nudgeIDOrTopic); ok {
			o.ID, o.Topic, o.Priority = f.ID, f.Topic, f.Priority
			o.Hour = f.At.In(p.cfg.Location).Hour()
		}
		p.led.addOutcome(o, &p.cfg, now)
	})
}

// ApplyAdaptiveTuning moves the hour-quota multiplier toward the recent
// acceptance rate and returns it. The runner calls it each tick.
func (p *Policy) ApplyAdaptiveTuning(acceptanceRate float64, samples int) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx := context.Background()
	if err := p.hydrateLocked(ctx); err != nil {
		p.log.Warn("policy: adaptive tuning skipped; shared state unavailable", "err", err)
		return p.led.multiplier
	}
	next := nextMultiplier(p.cfg.Adaptive, p.led.multiplier, acceptanceRate, samples)
	if next == p.led.multiplier {
		return next
	}
	prev := p.led.multiplier
	if err := p.updateLocked(ctx, func() { p.led.multiplier = next }); err != nil {
		p.log.Warn("policy: persisting adaptive multiplier failed", "err", err)
	}
	p.log.Info("policy: adaptive multiplier moved", "from", prev, "to", p.led.multiplier,
		"acceptance_rate", acceptanceRate, "samples", samples)
	return p.led.multiplier
}

// nextMultiplier: symmetric around TargetRate, clamped, with a cold-start
// floor, a volume gate that asks more evidence to loosen than to tighten,
// and a hysteresis band.
func nextMultiplier(a AdaptiveConfig, cur, rate float64, samples int) float64 {
	if math.IsNaN(rate) || samples < a.MinSamplesToTighten {
		return cur
	}
	rate = math.Max(0, math.Min(1, rate))
	target := 1 + a.Gain*(rate-a.TargetRate)
	target = math.Max(a.MinMultiplier, math.Min(a.MaxMultiplier, target))
	if samples < a.ColdStartSamples && target < a.ColdStartFloor {
		target = a.ColdStartFloor
	}
	target = math.Round(target*100) / 100
	if math.Abs(target-cur) < a.HysteresisBand-1e-9 {
		return cur
	}
	if target > cur && samples < a.MinSamplesToLoosen {
		return cur
	}
	return target
}
