package config

import "time"

// HeartbeatConfig configures the heartbeat service.
type HeartbeatConfig struct {
	Enabled  bool     `json:"enabled"`
	Interval Duration `json:"interval"`
}

func defaultHeartbeat() HeartbeatConfig {
	return HeartbeatConfig{Enabled: true, Interval: Duration(30 * time.Minute)}
}

func (h HeartbeatConfig) validate() error {
	if h.Interval < Duration(time.Minute) {
		return &Error{Key: "heartbeat.interval", Msg: "must be at least 1m"}
	}
	return nil
}
