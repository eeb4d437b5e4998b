package config

import "github.com/raven-agent/raven/internal/heartbeat"

// HeartbeatConfig is the "heartbeat" section; package heartbeat owns it
// and its defaults.
type HeartbeatConfig = heartbeat.Config
