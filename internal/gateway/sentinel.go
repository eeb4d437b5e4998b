package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// StartSentinel builds the Sentinel over the App's data dir and plugs it into
// the agent loop: the injector as a response modifier, the discovery-menu
// consumer as a user-inbound hook, and the nudge_feedback tool. The tick loop
// (with the defer loop) runs only when sentinel.enabled; it stops when ctx
// ends or the App closes. Call it once, before the first turn.
func (a *App) StartSentinel(ctx context.Context) (*sentinel.System, error) {
	sys, err := a.AttachSentinel(ctx)
	if err != nil {
		return nil, err
	}
	cfg := a.Config.Sentinel
	// The loop (ticks plus the defer loop) lives as long as both the
	// caller's ctx and the App.
	if !cfg.Enabled {
		a.Log.Info("sentinel: off (sentinel.enabled=false); queued injects, menus and feedback still work")
		// Cron fires still append to feedback.jsonl; the tick loop that
		// trims it is off, so trim here.
		a.Go("feedback-trim", func(ctx context.Context) error {
			for {
				if _, err := sys.Feedback.MaybeTrim(ctx); err != nil && ctx.Err() == nil {
					a.Log.Warn("feedback log trim failed", "err", err)
				}
				if err := clock.Sleep(ctx, a.Clock, time.Hour); err != nil {
					return nil
				}
			}
		})
		return sys, nil
	}
	a.Go("sentinel", func(appCtx context.Context) error {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(appCtx, cancel)
		defer stop()
		sys.Runner.Start(runCtx)
		<-runCtx.Done()
		sys.Runner.Stop()
		return nil
	})
	a.Log.Info("sentinel: started", "interval", cfg.Interval.D().String())
	return sys, nil
}

// AttachSentinel builds the Sentinel and plugs it into the agent loop
// without starting its tick loop: the injector as a response modifier, the
// discovery-menu consumer as a user-inbound hook, the nudge_feedback tool.
// `raven chat` uses it beside a gateway, which owns the loop; both share
// the one locked state file, so neither loses nor double-consumes an inject.
func (a *App) AttachSentinel(ctx context.Context) (*sentinel.System, error) {
	provider, err := a.plannerProvider()
	if err != nil {
		return nil, err
	}
	sys, err := sentinel.NewSystem(sentinel.SystemOptions{
		Paths: a.Paths, Config: a.Config.Sentinel, Provider: provider,
		Post: a.Hub.Post,
		// A nudge without a session goes to the owner's most recent
		// session on a channel this process can deliver to.
		HasOutlet:    a.Hub.Has,
		Sessions:     a.Sessions.Active,
		LastActivity: a.Sessions.LastActivity,
		Messages:     a.Sessions.Since,
		Spawn: func(ctx context.Context, task, channel, chatID string) error {
			_, err := a.Subagents.Spawn(ctx, task, channel, chatID)
			return err
		},
		OnDelivered: a.rememberNudge,
		OnTick: func(rec sentinel.TickRecord) {
			a.emit("sentinel.tick", rec.Target, rec)
			if rec.Allowed != nil && !*rec.Allowed {
				a.emit("policy.denied", rec.Target, map[string]any{"layer": rec.Layer, "reason": rec.VerdictReason, "action": rec.Action})
			}
		},
		Clock: a.Clock, Logger: a.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: sentinel: %w", err)
	}
	a.Agent.AddResponseModifier(sys.Injector.Modify)
	// The modifier only puts injects in flight; the turn's delivery
	// decides whether they are charged or requeued.
	a.OnTurnDone(func(req spine.TurnRequest, res spine.Result) {
		sys.Injector.SettleTurn(req, a.replyReached(req, res))
	})
	a.Agent.AddInboundHook(sys.Consumer.Hook)
	a.Tools.Register(sys.FeedbackTool())
	a.Sentinel = sys
	return sys, nil
}

// plannerProvider is the App's model, or sentinel.planner_model's when set.
// Nil (no model configured) makes the planner skip; NewSystem says so once.
func (a *App) plannerProvider() (llm.Provider, error) {
	spec := a.Config.Sentinel.PlannerModel
	if spec == "" {
		return a.Provider, nil
	}
	c := a.Config
	c.Model = spec
	p, err := NewProvider(c, a.Clock, a.Log)
	if err != nil {
		return nil, fmt.Errorf("gateway: sentinel.planner_model: %w", err)
	}
	return p, nil
}

// replyReached reports whether a finished turn's reply reached the owner:
// delivered through an outlet, or — on an ephemeral channel with no outlet
// here, such as `raven chat -m` — handed back on the ticket to the caller
// that submitted the turn and prints it.
func (a *App) replyReached(req spine.TurnRequest, res spine.Result) bool {
	if res.Err != nil || res.Reply == "" {
		return false
	}
	return res.Delivered || (spine.IsEphemeral(req.Channel) && !a.Hub.Has(req.Channel))
}

// rememberNudge writes a delivered nudge into its conversation's session, so
// the agent sees what it said unprompted — and the nudge id it needs to call
// nudge_feedback when the owner reacts ("stop reminding me").
func (a *App) rememberNudge(ctx context.Context, d executor.Delivery) {
	ch, id, ok := spine.SplitConversationKey(d.Session)
	if !ok || d.NudgeID == "" {
		return
	}
	e := session.Entry{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("[proactive %s, nudge_id=%s] %s", d.Action, d.NudgeID, d.Content)},
		Conversation: d.Session, Channel: ch, ChatID: id, Origin: string(spine.OriginSentinel), At: a.Clock.Now(),
	}
	if err := a.Sessions.Append(context.WithoutCancel(ctx), e); err != nil {
		a.Log.Warn("sentinel: nudge not recorded in session", "session", d.Session, "err", err)
	}
}
