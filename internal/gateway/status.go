package gateway

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Status is the gateway's part of the gateway.status result.
type Status = api.GatewayState

// status reports the effective values: rt.Config() is the start-up config
// with the live keys of the last reload.
func (g *Gateway) status(ctx context.Context) (api.GatewayState, error) {
	rt := g.rt
	cfg := rt.Config()
	planner := cfg.Sentinel.PlannerModel
	if planner == "" {
		planner = rt.ProviderName()
	}
	pending, err := rt.Outbox().Count(ctx)
	if err != nil {
		rt.Logger().Warn("gateway status: outbox not counted", "err", err)
		pending = -1
	}
	appliedAt, restart, refused := g.reload.snapshot()
	if restart == nil {
		restart = []string{}
	}
	return Status{DataDir: rt.Paths().Root, Model: rt.ProviderName(), PlannerModel: planner, Channels: rt.Hub().Channels(),
		Forward: append([]string{}, cfg.Channels.Forward...), SentinelEnabled: cfg.Sentinel.Enabled,
		SentinelEvery: cfg.Sentinel.Interval.D().String(), CronEnabled: cfg.Cron.Enabled,
		HeartbeatOn: cfg.Heartbeat.Enabled, HeartbeatEvery: cfg.Heartbeat.Interval.D().Round(time.Second).String(),
		LogLevel: cfg.Log.Level, Attached: append([]string{}, rt.Attached()...), OutboxPending: pending, UserBusy: rt.Scheduler().UserBusy(),
		ConfigAppliedAt: appliedAt.UTC(), RestartNeeded: restart, ConfigError: refused}, nil
}
