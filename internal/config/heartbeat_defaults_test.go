package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/heartbeat"
)

// The heartbeat section's defaults are package heartbeat's, and only
// theirs: a config.json without the section loads them, under the same
// dotted keys.
func TestHeartbeatDefaultsComeFromThePackage(t *testing.T) {
	if got, want := config.Default().Heartbeat, heartbeat.DefaultConfig(); got != want {
		t.Fatalf("config.Default().Heartbeat = %+v, want heartbeat.DefaultConfig() %+v", got, want)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"heartbeat":{"interval":"45m"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := heartbeat.DefaultConfig()
	want.Interval = config.Duration(45 * 60 * 1e9)
	if cfg.Heartbeat != want {
		t.Fatalf("loaded %+v, want the package defaults with interval 45m", cfg.Heartbeat)
	}
}
