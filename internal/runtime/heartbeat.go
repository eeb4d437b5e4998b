package runtime

import (
	"context"

	"github.com/raven-agent/raven/internal/config"

	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/wake"
)

// buildHeartbeat builds the wake scheduler and the heartbeat service it
// drives. Wakes are parked while user turns run and re-fired when they
// finish; a finished subagent or cron fire wakes it early. A due task's
// result goes where Resolve says (a surface, forward channels, the most
// recent real channel, else the outbox): never computed and dropped.
func (r *Runtime) buildHeartbeat(context.Context, Options) error {
	ws := wake.New(wake.Options{Clock: r.clk, Logger: r.log.With("component", "wake"),
		MinInterval: r.cfg.Heartbeat.WakeMinInterval.D(), Busy: r.scheduler.UserBusy})
	r.wake = ws
	r.observeTurns(nil, func(spine.TurnRequest, spine.Result) { ws.TurnDone() })
	r.subagents.OnDone = func(id string) { ws.RequestWakeNow("subagent " + id + " finished") }
	o := HeartbeatOptions(r.paths, r.cfg)
	// The provider already knows its model; the spec ("openai/gpt-4o-mini")
	// is not a model name an API accepts.
	o.Provider = r.provider
	o.Submit, o.Post, o.Waiter = r.scheduler.Submit, r.hub.Post, ws
	o.Clock, o.Logger = r.clk, r.log.With("component", "heartbeat")
	o.Resolve = r.heartbeatTargets
	o.OnTick = r.settleHeartbeatTick
	if r.cfg.Heartbeat.QuietHours {
		pol := r.sentinel.Policy
		o.Quiet = func() bool { return pol.SnapshotState().InQuietHours }
	}
	hb, err := heartbeat.New(o)
	if err != nil {
		return err
	}
	r.heartbeat = hb
	return nil
}

// HeartbeatOptions fills the heartbeat.Options that come from the data
// directory and the config; the caller adds Provider, Submit, Post,
// Waiter, Resolve, Clock and Logger.
func HeartbeatOptions(p config.Paths, cfg config.Config) heartbeat.Options {
	h := cfg.Heartbeat
	return heartbeat.Options{
		Path:         p.Heartbeat(),
		Interval:     h.Interval.D(),
		MaxFileBytes: h.MaxFileBytes,
		Channel:      h.Channel,
		ChatID:       h.ChatID,
		Forward:      cfg.Channels.Forward,
		LastRunPath:  heartbeat.LastRunPath(p.Root),
		TurnTimeout:  h.TurnTimeout.D(),
	}
}

func (r *Runtime) heartbeatTargets(channel, chatID string) []heartbeat.Target {
	ts := r.Resolve(channel, chatID)
	out := make([]heartbeat.Target, len(ts))
	for i, t := range ts {
		out[i] = heartbeat.Target{Channel: t.Channel, ChatID: t.ChatID}
	}
	return out
}

// buildTriggers opens sentinel/triggers.json, the file IPC through which
// `raven heartbeat trigger` and other CLI processes reach the running
// gateway.
func (r *Runtime) buildTriggers(context.Context, Options) error {
	r.triggers = wake.NewTriggerStore(r.paths.Triggers(), r.clk, r.log.With("component", "triggers"))
	return nil
}

// startTriggers drains the triggers on a short cadence. One consumer per
// data dir: the gateway.
func (r *Runtime) startTriggers() {
	sys := r.sentinel
	r.Go("triggers", func(ctx context.Context) error {
		return r.triggers.Consume(ctx, r.cfg.Sentinel.TriggerPoll.D(), func(ctx context.Context, t wake.Trigger) {
			switch t.Kind {
			case wake.TriggerHeartbeat:
				r.wake.RequestWakeNow("manual: " + t.Reason)
			case wake.TriggerTick:
				sys.Runner.TickOnce(ctx)
			case wake.TriggerDiscovery:
				sys.Runner.RunDiscovery(ctx)
			}
		})
	})
}
