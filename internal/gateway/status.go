package gateway

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Status is the gateway's part of the gateway.status result.
type Status = api.GatewayState

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
	return Status{DataDir: rt.Paths().Root, Model: rt.ProviderName(), PlannerModel: planner, Channels: rt.Hub().Channels(),
		Forward: append([]string{}, cfg.Channels.Forward...), SentinelEnabled: cfg.Sentinel.Enabled,
		SentinelEvery: cfg.Sentinel.Interval.D().String(), CronEnabled: cfg.Cron.Enabled,
		HeartbeatOn: cfg.Heartbeat.Enabled, HeartbeatEvery: cfg.Heartbeat.Interval.D().Round(time.Second).String(),
		Attached: append([]string{}, rt.Attached()...), OutboxPending: pending, UserBusy: rt.Scheduler().UserBusy()}, nil
}
