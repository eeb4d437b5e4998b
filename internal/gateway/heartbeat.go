package gateway

import (
	"context"

	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/wake"
)

// StartHeartbeat runs the heartbeat service driven by the wake scheduler.
// Wakes are parked while user turns run and re-fired when they finish.
func (a *App) StartHeartbeat() (*wake.Scheduler, error) {
	ws := wake.New(wake.Options{Clock: a.Clock, Logger: a.Log.With("component", "wake"),
		MinInterval: a.Config.Heartbeat.WakeMinInterval.D(), Busy: a.Scheduler.UserBusy})
	a.OnTurnDone(func(spine.TurnRequest, spine.Result) { ws.TurnDone() })
	a.Wake = ws
	if !a.Config.Heartbeat.Enabled {
		return ws, nil
	}
	o := heartbeat.ConfigOptions(a.Paths, a.Config)
	// The provider already knows its model; the spec ("openai/gpt-4o-mini")
	// is not a model name an API accepts.
	o.Provider = a.Provider
	o.Submit, o.Post, o.Waiter = a.Scheduler.Submit, a.Hub.Post, ws
	o.Clock, o.Logger = a.Clock, a.Log.With("component", "heartbeat")
	o.LastChatID = func(channel string) string {
		id, _ := a.Sessions.LastChatID(a.ctx, channel)
		return id
	}
	hb, err := heartbeat.New(o)
	if err != nil {
		return nil, err
	}
	a.Subagents.OnDone = func(id string) { ws.RequestWakeNow("subagent " + id + " finished") }
	a.Go("heartbeat", hb.Run)
	return ws, nil
}

// StartTriggers drains sentinel/triggers.json on a short cadence: the file
// IPC through which `raven heartbeat trigger` and other CLI processes reach
// the running gateway. One consumer per data dir: the gateway.
func (a *App) StartTriggers(onTick, onDiscovery func(ctx context.Context)) {
	store := wake.NewTriggerStore(a.Paths.Triggers(), a.Clock, a.Log.With("component", "triggers"))
	a.Go("triggers", func(ctx context.Context) error {
		return store.Consume(ctx, a.Config.Sentinel.TriggerPoll.D(), func(ctx context.Context, t wake.Trigger) {
			switch t.Kind {
			case wake.TriggerHeartbeat:
				if a.Wake != nil {
					a.Wake.RequestWakeNow("manual: " + t.Reason)
				}
			case wake.TriggerTick:
				if onTick != nil {
					onTick(ctx)
				}
			case wake.TriggerDiscovery:
				if onDiscovery != nil {
					onDiscovery(ctx)
				}
			}
		})
	})
}
