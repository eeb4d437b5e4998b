package runtime

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/usage"
)

// buildUsage opens the usage tables and the meter every model is wrapped
// in (buildModels): each call recorded with its origin, ambient calls held
// to usage.caps. A reached cap tells the owner once, through the resolver
// like any proactive message, and logs one event.
func (r *Runtime) buildUsage(ctx context.Context, _ Options) error {
	st, err := usage.Open(ctx, r.db, r.log.With("component", "usage"))
	if err != nil {
		return err
	}
	r.AddCloser(func(context.Context) error { return st.Close() })
	r.usage = st
	r.meter, err = usage.NewMeter(usage.MeterOptions{Store: st, Config: r.cfg.Usage, Location: r.OwnerLocation(),
		Clock: r.clk, Logger: r.log.With("component", "usage"), OnPause: r.notifyPause})
	return err
}

// OwnerLocation is the owner's time zone (sentinel.policy's), in which
// usage days and months start.
func (r *Runtime) OwnerLocation() *time.Location {
	if l := r.cfg.Sentinel.Policy.Location; l != nil {
		return l
	}
	return time.Local
}

// notifyPause tells the owner ambient work paused, wherever Resolve says
// (the outbox at worst), and logs the event.
func (r *Runtime) notifyPause(ctx context.Context, p usage.Pause) {
	r.emit(eventlog.KindUsagePaused, "", p)
	m := spine.Message{Content: p.Notice(r.OwnerLocation()), Proactive: true, Extras: map[string]any{"usage_pause": p.Scope}}
	for _, t := range r.Resolve("", "") {
		m.Channel, m.ChatID = t.Channel, t.ChatID
		if err := r.hub.Post(ctx, m); err != nil {
			r.log.Warn("usage: pause notice not delivered", "target", t.Key(), "err", err)
		}
	}
}

// settleSentinelTick marks a Sentinel tick that delivered nothing silent.
func (r *Runtime) settleSentinelTick(rec sentinel.TickRecord) {
	r.meter.SettleTick(r.ctx, string(spine.OriginSentinel), rec.Delivered || rec.Queued)
}

// settleHeartbeatTick marks a heartbeat tick that delivered nothing silent.
func (r *Runtime) settleHeartbeatTick(out heartbeat.Outcome) {
	r.meter.SettleTick(r.ctx, string(spine.OriginHeartbeat), len(out.Delivered) > 0)
}

// Usage is the store of per-call usage records.
func (r *Runtime) Usage() *usage.Store { return r.usage }

// Meter is what every model call of this runtime goes through.
func (r *Runtime) Meter() *usage.Meter { return r.meter }
