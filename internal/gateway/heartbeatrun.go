package gateway

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/spine"
)

// Where a foreground heartbeat tick delivers: this process's terminal only.
const (
	heartbeatRunChannel = "cli"
	heartbeatRunChatID  = "direct"
)

// RunHeartbeatOnce runs one heartbeat tick now, in the foreground, through
// the App's agent loop and scheduler (`raven heartbeat run`). A due task's
// reply goes to out, registered as the cli outlet, and nowhere else:
// channels.forward and heartbeat.channel are ignored, so a manual run never
// messages the owner's other surfaces. A nil out drops the reply.
func (a *App) RunHeartbeatOnce(ctx context.Context, out spine.Outlet) (heartbeat.Outcome, error) {
	o := heartbeat.ConfigOptions(a.Paths, a.Config)
	o.Channel, o.ChatID, o.Forward = heartbeatRunChannel, heartbeatRunChatID, nil
	// The provider already knows its model (see StartHeartbeat).
	o.Provider = a.Provider
	o.Submit, o.Post = a.Scheduler.Submit, a.Hub.Post
	o.Clock, o.Logger = a.Clock, a.Log.With("component", "heartbeat")
	if out == nil {
		out = spine.OutletFunc(func(context.Context, spine.Message) error { return nil })
	}
	a.Hub.Register(heartbeatRunChannel, out)
	hb, err := heartbeat.New(o)
	if err != nil {
		return heartbeat.Outcome{}, fmt.Errorf("gateway: heartbeat: %w", err)
	}
	return hb.TickOnce(ctx)
}
