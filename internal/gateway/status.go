package gateway

import (
	"context"
	"time"
)

// Status is the gateway's part of the gateway.status result: the values in
// effect in the running gateway, not the file on disk.
type Status struct {
	DataDir         string   `json:"data_dir"`
	Model           string   `json:"model"`
	PlannerModel    string   `json:"planner_model"`
	Channels        []string `json:"channels"`
	Forward         []string `json:"forward"`
	SentinelEnabled bool     `json:"sentinel_enabled"`
	SentinelEvery   string   `json:"sentinel_interval"`
	CronEnabled     bool     `json:"cron_enabled"`
	HeartbeatOn     bool     `json:"heartbeat_enabled"`
	HeartbeatEvery  string   `json:"heartbeat_interval"`
	// Attached lists the conversations a TUI or chat is attached to.
	Attached []string `json:"attached"`
	// OutboxPending counts proactive messages waiting for an attach.
	OutboxPending int  `json:"outbox_pending"`
	UserBusy      bool `json:"user_busy"`
}

func (g *Gateway) status(ctx context.Context) (any, error) {
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
