package config

import "time"

// SentinelConfig configures the proactive Sentinel. Off by default.
type SentinelConfig struct {
	Enabled  bool     `json:"enabled"`
	Interval Duration `json:"interval"`
}

func defaultSentinel() SentinelConfig {
	return SentinelConfig{Enabled: false, Interval: Duration(1800 * time.Second)}
}

func (s SentinelConfig) validate() error {
	if s.Interval < Duration(time.Minute) {
		return &Error{Key: "sentinel.interval", Msg: "must be at least 1m"}
	}
	return nil
}
