package controlapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// TypedHandler serves one method of the contract: req is already decoded
// strictly; the returned error follows HandlerFunc's rules.
type TypedHandler[Req, Resp any] func(ctx context.Context, call *Call, req Req) (Resp, error)

// Handle registers fn for m with the access it requires. Params are decoded
// strictly into Req (DefaultLimits) before fn runs.
func Handle[Req, Resp any](s *Server, m api.Method[Req, Resp], access Access, fn TypedHandler[Req, Resp]) {
	HandleLimits(s, m, access, defaultLimits, fn)
}

// HandleLimits is Handle with explicit decoding limits.
func HandleLimits[Req, Resp any](s *Server, m api.Method[Req, Resp], access Access, lim Limits, fn TypedHandler[Req, Resp]) {
	s.Handle(m.Name(), access, func(ctx context.Context, call *Call) (any, error) {
		var req Req
		if err := DecodeStrictLimits(call.Params, &req, lim); err != nil {
			return nil, err
		}
		resp, err := fn(ctx, call, req)
		if err != nil {
			return nil, err
		}
		return resp, nil
	})
}

// Invoke calls m on c with req and returns its decoded result; a server
// error comes back as *RPCError.
func Invoke[Req, Resp any](ctx context.Context, c *Client, m api.Method[Req, Resp], req Req) (Resp, error) {
	var resp Resp
	err := c.Call(ctx, m.Name(), req, &resp)
	return resp, err
}

// Notify sends notification n with params p to one connection.
func Notify[P any](to Notifier, n api.Notification[P], p P) error { return to.Notify(n.Name(), p) }

// DecodeNotification returns got's params as n's payload; ok is false when
// got is another notification.
func DecodeNotification[P any](got Notification, n api.Notification[P]) (p P, ok bool, err error) {
	if got.Method != n.Name() {
		return p, false, nil
	}
	if err := json.Unmarshal(got.Params, &p); err != nil {
		return p, true, fmt.Errorf("controlapi: decode %s: %w", n.Name(), err)
	}
	return p, true, nil
}
