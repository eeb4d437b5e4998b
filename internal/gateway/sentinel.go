package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// sentinelTargetWindow bounds how far back a nudge without a target looks
// for the owner's most recent session.
const sentinelTargetWindow = 7 * 24 * time.Hour

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
		Post:         a.Hub.Post,
		Targets:      a.sentinelTargets,
		Sessions:     a.Sessions.Active,
		LastActivity: a.Sessions.LastActivity,
		Messages:     a.Sessions.Since,
		Spawn: func(ctx context.Context, task, channel, chatID string) error {
			_, err := a.Subagents.Spawn(ctx, task, channel, chatID)
			return err
		},
		Tool: func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			return a.Tools.Run(ctx, llm.ToolCall{Name: name, Arguments: string(args)})
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

// sentinelTargets sends a nudge for a session to that session, and one
// without a session to the owner's most recent session on a channel that
// has an outlet here.
func (a *App) sentinelTargets(session string) []executor.Target {
	if session != "" {
		return nil // the dispatcher splits "channel:chat_id" itself
	}
	ctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
	defer cancel()
	ss, err := a.Sessions.Active(ctx, a.Clock.Now().Add(-sentinelTargetWindow))
	if err != nil {
		a.Log.Warn("sentinel: no default target; sessions unavailable", "err", err)
		return nil
	}
	for _, s := range ss {
		if s.Channel != "" && s.ChatID != "" && a.Hub.Has(s.Channel) {
			return []executor.Target{{Channel: s.Channel, ChatID: s.ChatID}}
		}
	}
	return nil
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
