package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// HeartbeatConfig configures the heartbeat service (workspace/HEARTBEAT.md)
// and the event-driven wake that can end its sleep early.
type HeartbeatConfig struct {
	Enabled bool `json:"enabled"`
	// Interval is the sleep between heartbeat ticks. Default 30m.
	Interval Duration `json:"interval"`
	// Channel and ChatID name where a heartbeat run's reply is delivered.
	// An empty or ephemeral channel (cli, tui) expands to channels.forward,
	// like a cron job; a real channel without a chat id uses the chat of its
	// most recent session. Default: empty (forward channels).
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
	// WakeMinInterval is the least spacing between two heartbeat fires; a
	// wake requested inside it is deferred to its end, never dropped. Default 2m.
	WakeMinInterval Duration `json:"wake_min_interval"`
	// MaxFileBytes caps how much of HEARTBEAT.md is read. Default 64 KiB.
	MaxFileBytes int `json:"max_file_bytes"`
	// TurnTimeout bounds phase two (the agent turn run for the tasks). Default 10m.
	TurnTimeout Duration `json:"turn_timeout"`
}

func defaultHeartbeat() HeartbeatConfig {
	return HeartbeatConfig{
		Enabled:         true,
		Interval:        Duration(30 * time.Minute),
		WakeMinInterval: Duration(2 * time.Minute),
		MaxFileBytes:    64 << 10,
		TurnTimeout:     Duration(10 * time.Minute),
	}
}

func (h HeartbeatConfig) validate() error {
	switch {
	case h.Interval < Duration(time.Minute):
		return &Error{Key: "heartbeat.interval", Msg: "must be at least 1m"}
	case h.WakeMinInterval < Duration(time.Second) || h.WakeMinInterval > Duration(time.Hour):
		return &Error{Key: "heartbeat.wake_min_interval", Msg: "must be 1s..1h"}
	case h.MaxFileBytes < 1<<10 || h.MaxFileBytes > 1<<20:
		return &Error{Key: "heartbeat.max_file_bytes", Msg: "must be 1024..1048576"}
	case h.TurnTimeout < Duration(10*time.Second):
		return &Error{Key: "heartbeat.turn_timeout", Msg: "must be at least 10s"}
	case h.Channel != "" && !configtype.ChannelName(h.Channel):
		return &Error{Key: "heartbeat.channel", Msg: fmt.Sprintf("%q is not a channel name (lowercase letters, digits, - and _)", h.Channel)}
	case h.ChatID != "" && h.Channel == "":
		return &Error{Key: "heartbeat.chat_id", Msg: "set heartbeat.channel as well"}
	case len(h.ChatID) > 256 || strings.ContainsAny(h.ChatID, "\r\n"):
		return &Error{Key: "heartbeat.chat_id", Msg: "must be one line of at most 256 bytes"}
	}
	return nil
}
