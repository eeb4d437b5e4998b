package config_test

import (
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/heartbeat"
)

// TestHeartbeatDefaultsMatchThePackage guards the one section whose
// defaults config cannot take from its package: heartbeat imports config
// (heartbeat.ConfigOptions), so config cannot import heartbeat. Until that
// function moves to the runtime, this test keeps the two copies equal.
func TestHeartbeatDefaultsMatchThePackage(t *testing.T) {
	h := config.Default().Heartbeat
	if h.Interval.D() != heartbeat.DefaultInterval || h.MaxFileBytes != heartbeat.DefaultMaxFileBytes || h.TurnTimeout.D() != heartbeat.DefaultTurnTimeout {
		t.Fatalf("config heartbeat defaults %+v differ from package heartbeat's (%v, %d, %v)",
			h, heartbeat.DefaultInterval, heartbeat.DefaultMaxFileBytes, heartbeat.DefaultTurnTimeout)
	}
}
