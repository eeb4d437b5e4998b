package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// DispatcherOptions are the NudgeDispatcher's dependencies.
type DispatcherOptions struct {
	Gate Gate
	// Post may be nil here and bound later with SetPost (the hub is built
	// after the dispatcher in the gateway).
	Post PostFunc
	// Targets resolves a session to outlets; nil sends to the session itself.
	Targets TargetsFunc
	// Menus makes a discovery menu answerable in each session it is
	// posted to (the PendingDecisionStore); nil: a menu is answerable only
	// in its planned session.
	Menus       MenuShower
	OnDelivered DeliveredFunc
	Clock       clock.Clock
	Logger      *slog.Logger
}

// MenuShower records where a discovery menu is shown
// (*PendingDecisionStore).
type MenuShower interface {
	Show(ctx context.Context, id, session string) error
	Unshow(ctx context.Context, id, session string) error
}

// NudgeDispatcher posts standalone proactive messages through the hub. It
// keeps no state of its own: quotas live in the policy it consults, and it
// never re-enters the agent loop, so the agent cannot "act on" a reminder.
type NudgeDispatcher struct {
	o      DispatcherOptions
	postFn atomic.Pointer[PostFunc]
}

// ErrNoPost is the delivery error before a post function was bound.
var ErrNoPost = errors.New("executor: dispatcher has no post function bound")

// NewDispatcher returns a dispatcher.
func NewDispatcher(opts DispatcherOptions) *NudgeDispatcher {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &NudgeDispatcher{o: opts}
	if opts.Post != nil {
		d.SetPost(opts.Post)
	}
	return d
}

// SetPost binds the post function (late binding).
func (d *NudgeDispatcher) SetPost(p PostFunc) { d.postFn.Store(&p) }

// Targets resolves session through the configured resolver.
func (d *NudgeDispatcher) Targets(session string) []Target {
	if d.o.Targets != nil {
		if t := d.o.Targets(session); len(t) > 0 {
			return t
		}
	}
	if ch, id, ok := spine.SplitConversationKey(session); ok {
		return []Target{{Channel: ch, ChatID: id}}
	}
	return nil
}

// Dispatch checks the policy, posts n to its targets and, only if at least
// one delivery succeeded, records the fire. A failed delivery costs no quota.
func (d *NudgeDispatcher) Dispatch(ctx context.Context, n Nudge) Result {
	if strings.TrimSpace(n.Message) == "" {
		return denied(LayerInput, "empty nudge message")
	}
	return d.deliver(ctx, n, n.Message, nil)
}

// DispatchOptions posts a rendered task-discovery menu verbatim: it is the
// finished artifact, and paraphrasing it through the agent would break the
// numbering the pick router relies on.
func (d *NudgeDispatcher) DispatchOptions(ctx context.Context, pd PendingDecision) Result {
	if len(pd.Options) == 0 {
		return denied(LayerInput, "pending decision has no options")
	}
	n := Nudge{Action: policy.ActionNudge, Message: RenderMenu(pd), Session: pd.Session, Priority: pd.Priority, Topic: pd.Topic, Reason: "task discovery"}
	return d.deliver(ctx, n, n.Message, map[string]any{ExtraPendingDecision: pd.ID})
}

// deliver resolves n's targets first and checks the policy for each of
// them, so the per-session cooldown holds for the session a nudge actually
// reaches (a nudge without a session, a plan slot, a fallback, a defer).
// Any target in cooldown holds back the whole nudge: it is one owner.
func (d *NudgeDispatcher) deliver(ctx context.Context, n Nudge, content string, extras map[string]any) Result {
	targets := d.Targets(n.Session)
	if len(targets) == 0 {
		return denied(LayerInput, fmt.Sprintf("no delivery target for session %q", n.Session))
	}
	req := n.request()
	v := policy.Verdict{Allow: true}
	if d.o.Gate != nil {
		for _, t := range targets {
			req.SessionKey = t.Key()
			if v = d.o.Gate.Check(ctx, req); !v.Allow {
				return Result{Verdict: v}
			}
		}
	}
	res := d.post(ctx, targets, content, extras)
	res.Verdict = v
	if !res.Delivered {
		d.o.Logger.Warn("sentinel: nudge not delivered; quota not charged", "session", n.Session, "err", res.Error)
		return res
	}
	// The fire records the sessions it reached.
	req.SessionKey, req.AlsoSessions = res.Targets[0], res.Targets[1:]
	res.NudgeID = d.record(ctx, req)
	d.report(ctx, res, req.Action, content, n)
	return res
}

// DeliverCharged posts a message whose fire the policy already charged —
// a spawned micro-agent's result, under the spawn's nudge ID — to the
// targets of n.Session, and reports the delivery (feedback, the owner's
// session) like any nudge. It is not checked or charged again: the spawn
// passed the policy when it started.
func (d *NudgeDispatcher) DeliverCharged(ctx context.Context, n Nudge, nudgeID string) Result {
	if strings.TrimSpace(n.Message) == "" {
		return denied(LayerInput, "empty message")
	}
	targets := d.Targets(n.Session)
	if len(targets) == 0 {
		return denied(LayerInput, fmt.Sprintf("no delivery target for session %q", n.Session))
	}
	// The id rides along, so a result kept in the outbox can be recorded
	// under it when it is finally shown.
	res := d.post(ctx, targets, n.Message, map[string]any{ExtraNudgeID: nudgeID})
	res.Verdict = policy.Verdict{Allow: true}
	if !res.Delivered {
		d.o.Logger.Warn("sentinel: charged message not delivered", "session", n.Session, "nudge_id", nudgeID, "err", res.Error)
		return res
	}
	res.NudgeID = nudgeID
	d.report(ctx, res, n.request().Action, n.Message, n)
	return res
}

func (d *NudgeDispatcher) report(ctx context.Context, res Result, action, content string, n Nudge) {
	if d.o.OnDelivered == nil {
		return
	}
	d.o.OnDelivered(ctx, Delivery{
		NudgeID: res.NudgeID, Action: action, Session: strings.Join(res.Targets, ","), Content: content,
		Topic: n.Topic, Priority: n.Priority, At: d.o.Clock.Now(),
	})
}

func (d *NudgeDispatcher) record(ctx context.Context, req policy.Request) string {
	if d.o.Gate == nil {
		return ""
	}
	id, err := d.o.Gate.RecordFired(ctx, req)
	if err != nil {
		// Delivered but not charged: log loudly rather than pretend it failed.
		d.o.Logger.Error("sentinel: nudge delivered but fire not recorded", "err", err)
	}
	return id
}

// post sends content to every target, ungated. A menu is made answerable
// in a target before it is posted there, so an owner who answers at once
// finds it.
func (d *NudgeDispatcher) post(ctx context.Context, targets []Target, content string, extras map[string]any) Result {
	p := d.postFn.Load()
	if p == nil || *p == nil {
		return Result{Error: ErrNoPost.Error()}
	}
	menu, _ := extras[ExtraPendingDecision].(string)
	if d.o.Menus == nil {
		menu = ""
	}
	var res Result
	var errs []string
	for _, t := range targets {
		if menu != "" {
			if err := d.o.Menus.Show(ctx, menu, t.Key()); err != nil {
				d.o.Logger.Warn("sentinel: menu not made answerable where it is shown", "decision", menu, "session", t.Key(), "err", err)
			}
		}
		m := spine.Message{Channel: t.Channel, ChatID: t.ChatID, Content: content, Origin: spine.OriginSentinel, Proactive: true, Extras: extras}
		if err := (*p)(ctx, m); err != nil {
			errs = append(errs, err.Error())
			if menu != "" {
				if uerr := d.o.Menus.Unshow(context.WithoutCancel(ctx), menu, t.Key()); uerr != nil {
					d.o.Logger.Warn("sentinel: menu left answerable where it was not shown", "decision", menu, "session", t.Key(), "err", uerr)
				}
			}
			continue
		}
		res.Delivered = true
		res.Targets = append(res.Targets, t.Key())
	}
	res.Error = strings.Join(errs, "; ")
	return res
}
