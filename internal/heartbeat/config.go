package heartbeat

import (
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// DefaultWakeMinInterval is the least spacing between two heartbeat fires
// (heartbeat.wake_min_interval).
const DefaultWakeMinInterval = 2 * time.Minute

// Config is the "heartbeat" section of config.json: the heartbeat service
// (workspace/HEARTBEAT.md) and the event-driven wake that can end its
// sleep early.
type Config struct {
	Enabled bool `json:"enabled"`
	// Interval is the sleep between heartbeat ticks.
	Interval configtype.Duration `json:"interval"`
	// Channel and ChatID name where a heartbeat run's reply is delivered.
	// Empty: where the runtime's resolver sends proactive messages (an
	// attached surface, channels.forward, the most recent real channel,
	// else the outbox); a real channel without a chat id uses the chat of
	// its most recent session.
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
	// WakeMinInterval is the least spacing between two heartbeat fires; a
	// wake requested inside it is deferred to its end, never dropped.
	WakeMinInterval configtype.Duration `json:"wake_min_interval"`
	// MaxFileBytes caps how much of HEARTBEAT.md is read.
	MaxFileBytes int `json:"max_file_bytes"`
	// TurnTimeout bounds phase two (the agent turn run for the tasks).
	TurnTimeout configtype.Duration `json:"turn_timeout"`
	// QuietHours keeps the heartbeat silent in the owner's quiet hours
	// (sentinel.policy's, learned ones included): no model call there, the
	// tasks wait for the first tick after them; an explicit wake
	// (`raven heartbeat trigger`, a finished subagent or cron fire) still
	// runs. Default true.
	QuietHours bool `json:"quiet_hours"`
}

// DefaultConfig returns the documented defaults (heartbeat on).
func DefaultConfig() Config {
	return Config{
		Enabled:         true,
		Interval:        configtype.Duration(DefaultInterval),
		WakeMinInterval: configtype.Duration(DefaultWakeMinInterval),
		MaxFileBytes:    DefaultMaxFileBytes,
		TurnTimeout:     configtype.Duration(DefaultTurnTimeout),
		QuietHours:      true,
	}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c Config) Validate() error {
	switch {
	case c.Interval.D() < time.Minute:
		return configtype.Invalid("interval", "must be at least 1m")
	case c.WakeMinInterval.D() < time.Second || c.WakeMinInterval.D() > time.Hour:
		return configtype.Invalid("wake_min_interval", "must be 1s..1h")
	case c.MaxFileBytes < 1<<10 || c.MaxFileBytes > 1<<20:
		return configtype.Invalid("max_file_bytes", "must be 1024..1048576")
	case c.TurnTimeout.D() < 10*time.Second:
		return configtype.Invalid("turn_timeout", "must be at least 10s")
	case c.Channel != "" && !configtype.ChannelName(c.Channel):
		return configtype.Invalid("channel", "%q is not a channel name (lowercase letters, digits, - and _)", c.Channel)
	case c.ChatID != "" && c.Channel == "":
		return configtype.Invalid("chat_id", "set heartbeat.channel as well")
	case len(c.ChatID) > 256 || strings.ContainsAny(c.ChatID, "\r\n"):
		return configtype.Invalid("chat_id", "must be one line of at most 256 bytes")
	}
	return nil
}
