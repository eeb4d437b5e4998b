package api

import (
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/eventlog"
)

// HelloParams are auth.hello's params.
type HelloParams struct {
	Token string `json:"token"`
}

// HelloResult is auth.hello's result.
type HelloResult struct {
	Principal auth.Principal `json:"principal"`
	Protocol  int            `json:"protocol"`
}

// PingResult is ping's result.
type PingResult struct {
	Pong bool      `json:"pong"`
	Time time.Time `json:"time"`
}

// StatusResult is gateway.status's result. Gateway is the daemon's own
// part, absent from a bare control-API server.
type StatusResult struct {
	PID         int           `json:"pid"`
	Version     string        `json:"version,omitempty"`
	StartedAt   time.Time     `json:"started_at"`
	UptimeS     float64       `json:"uptime_s"`
	Connections int           `json:"connections"`
	LastSeq     int64         `json:"last_seq"`
	Gateway     *GatewayState `json:"gateway,omitempty"`
}

// TailParams are events.tail's params.
type TailParams struct {
	AfterSeq int64 `json:"after_seq"`
	Limit    int   `json:"limit,omitempty"`
}

// TailResult is events.tail's result. Missed is set when events after
// AfterSeq were pruned before they could be read; More when the page was
// cut short by the limit or the size budget.
type TailResult struct {
	Events         []eventlog.Event `json:"events"`
	OldestRetained int64            `json:"oldest_retained"`
	Missed         bool             `json:"missed"`
	More           bool             `json:"more"`
}

// SubscribeParams are events.subscribe's params. Without after_seq the
// feed starts at the next event.
type SubscribeParams struct {
	AfterSeq *int64 `json:"after_seq,omitempty"`
}

// SubscribeResult is events.subscribe's result.
type SubscribeResult struct {
	AfterSeq       int64 `json:"after_seq"`
	OldestRetained int64 `json:"oldest_retained"`
	Missed         bool  `json:"missed"`
}

// UnsubscribeResult is events.unsubscribe's result.
type UnsubscribeResult struct {
	Unsubscribed bool `json:"unsubscribed"`
}

// DroppedParams are the params of NotifyEventsDropped.
type DroppedParams struct {
	Reason  string `json:"reason"`
	LastSeq int64  `json:"last_seq"`
}

// ClosingParams are the params of NotifyClosing. Reasons: slow_consumer,
// frame_too_large, hello_timeout, auth_failures, shutdown.
type ClosingParams struct {
	Reason string `json:"reason"`
}

// ControlParams are the params of control.take, control.release and
// control.get. TTLSeconds (control.take only) defaults to 15 minutes.
type ControlParams struct {
	Conversation string `json:"conversation"`
	TTLSeconds   int    `json:"ttl_s,omitempty"`
}

// ReleaseResult is control.release's result.
type ReleaseResult struct {
	Released bool `json:"released"`
}

// ControllerResult is control.get's result.
type ControllerResult struct {
	Conversation string `json:"conversation"`
	Controller   string `json:"controller,omitempty"`
	Active       bool   `json:"active"`
}
