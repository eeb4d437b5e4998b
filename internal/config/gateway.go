package config

import (
	"net"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/spine"
)

// GatewayConfig configures `raven gateway`. It stays in package config:
// its readers (runtime, gateway) both import config, so neither can own
// it; its defaults come from the packages that apply them.
type GatewayConfig struct {
	// UserPool bounds concurrent user turns.
	UserPool      int      `json:"user_pool"`
	ShutdownGrace Duration `json:"shutdown_grace"`

	// EventsMaxCount and EventsMaxAge bound the event log's retention; the
	// older of the two limits wins. Defaults: 100000 events, 30 days.
	EventsMaxCount int      `json:"events_max_count"`
	EventsMaxAge   Duration `json:"events_max_age"`
	// TCPListen, when set (host:port), opens a TLS listener for remote
	// devices beside the unix socket. Off by default; needs TLSCert and TLSKey.
	TCPListen string `json:"tcp_listen,omitempty"`
	TLSCert   string `json:"tls_cert,omitempty"`
	TLSKey    string `json:"tls_key,omitempty"`
}

func defaultGateway() GatewayConfig {
	return GatewayConfig{
		UserPool: spine.DefaultUserPool, ShutdownGrace: Duration(10 * time.Second),
		EventsMaxCount: eventlog.DefaultMaxCount, EventsMaxAge: Duration(eventlog.DefaultMaxAge),
	}
}

func (g GatewayConfig) validate() error {
	if g.UserPool < 1 || g.UserPool > 256 {
		return &Error{Key: "gateway.user_pool", Msg: "must be 1..256"}
	}
	if g.ShutdownGrace < 0 || g.ShutdownGrace > Duration(10*time.Minute) {
		return &Error{Key: "gateway.shutdown_grace", Msg: "must be 0s..10m"}
	}
	if g.EventsMaxCount < 100 || g.EventsMaxCount > 100_000_000 {
		return &Error{Key: "gateway.events_max_count", Msg: "must be 100..100000000"}
	}
	if g.EventsMaxAge < Duration(time.Minute) {
		return &Error{Key: "gateway.events_max_age", Msg: "must be at least 1m"}
	}
	if !configtype.OneLine(g.TLSCert) {
		return &Error{Key: "gateway.tls_cert", Msg: "must be one line without control characters"}
	}
	if !configtype.OneLine(g.TLSKey) {
		return &Error{Key: "gateway.tls_key", Msg: "must be one line without control characters"}
	}
	if g.TCPListen != "" {
		if _, _, err := net.SplitHostPort(g.TCPListen); err != nil {
			return &Error{Key: "gateway.tcp_listen", Msg: "want host:port: " + err.Error()}
		}
		if g.TLSCert == "" || g.TLSKey == "" {
			return &Error{Key: "gateway.tcp_listen", Msg: "needs gateway.tls_cert and gateway.tls_key (the TCP listener is TLS only)"}
		}
	}
	return nil
}
