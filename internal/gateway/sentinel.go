package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
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
	cfg := a.Config.Sentinel
	provider, err := a.plannerProvider()
	if err != nil {
		return nil, err
	}
	sys, err := sentinel.NewSystem(sentinel.SystemOptions{
		Paths: a.Paths, Config: cfg, Provider: provider,
		Post:         a.Hub.Post,
		Targets:      a.sentinelTargets,
		Sessions:     a.Sessions.Active,
		LastActivity: a.Sessions.LastActivity,
		Spawn: func(ctx context.Context, task, channel, chatID string) error {
			_, err := a.Subagents.Spawn(ctx, task, channel, chatID)
			return err
		},
		Tool: func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			return a.Tools.Run(ctx, llm.ToolCall{Name: name, Arguments: string(args)})
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
	if !cfg.Enabled {
		a.Log.Info("sentinel: off (sentinel.enabled=false); queued injects, menus and feedback still work")
		return sys, nil
	}
	// The loop (ticks plus the defer loop) lives as long as both the
	// caller's ctx and the App.
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
