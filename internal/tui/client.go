package tui

import (
	"context"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Client is the part of the control-API client the TUI uses; the
// controlapi client satisfies it as it stands, tests use a fake. Calls go
// through invoke, so the method name and its types come from the contract.
type Client interface {
	Call(ctx context.Context, method string, params, result any) error
	// Notifications yields server→client notifications and is closed when
	// the connection ends — that close is how the TUI notices a gateway
	// restart.
	Notifications() <-chan Notification
	Close() error
}

// Notification is one server→client notification. It is the control
// API's own type, so *controlapi.Client is a Client as it stands.
type Notification = controlapi.Notification

// Dialer connects to the gateway; the TUI calls it again to reconnect.
type Dialer func(ctx context.Context) (Client, error)

// invoke calls m on c: the contract fixes the request sent and the result
// decoded, the Client interface stays a seam for tests.
func invoke[Req, Resp any](ctx context.Context, c Client, m api.Method[Req, Resp], req Req) (Resp, error) {
	var resp Resp
	err := c.Call(ctx, m.Name(), req, &resp)
	return resp, err
}
