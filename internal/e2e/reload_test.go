package e2e

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reloadStatus is the part of `gateway status --json` a reload changes.
type reloadStatus struct {
	Gateway struct {
		HeartbeatEvery string   `json:"heartbeat_interval"`
		SentinelEvery  string   `json:"sentinel_interval"`
		Forward        []string `json:"forward"`
		LogLevel       string   `json:"log_level"`
		RestartNeeded  []string `json:"restart_needed"`
		ConfigError    string   `json:"config_error"`
	} `json:"gateway"`
}

// `raven config set` while the gateway runs: a live key is in effect (and
// `gateway status` shows the new effective value), a restart-only key is
// listed under "restart needed for" with the old value still shown, a bad
// file is refused naming the key, and SIGHUP reloads at once.
func TestConfigReloadWhileGatewayRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	status := func() reloadStatus {
		var st reloadStatus
		e.MustRun("gateway", "status", "--json").JSON(t, &st)
		return st
	}
	const within = 15 * time.Second

	e.MustRun("config", "set", "heartbeat.interval", "45m")
	e.Eventually(within, "heartbeat.interval applied live", func() bool { return status().Gateway.HeartbeatEvery == "45m0s" })
	g.WaitLog(within, "config: applied live")
	if st := status(); len(st.Gateway.RestartNeeded) != 0 {
		t.Fatalf("a live key asks for a restart: %+v", st)
	}

	e.MustRun("config", "set", "sentinel.interval", "20m")
	e.Eventually(within, "restart needed for sentinel.interval", func() bool {
		return slices.Contains(status().Gateway.RestartNeeded, "sentinel.interval")
	})
	r := e.MustRun("gateway", "status")
	for _, want := range []string{"restart needed for: sentinel.interval", "every 45m0s", "every 30m0s"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("gateway status lacks %q:\n%s", want, r.Stdout)
		}
	}

	// A file that does not load is refused; the effective values stay.
	e.PatchConfig(map[string]any{"heartbeat.interval": "soon"})
	e.Eventually(within, "bad config refused", func() bool { return status().Gateway.ConfigError != "" })
	if st := status(); !strings.Contains(st.Gateway.ConfigError, "heartbeat.interval") || st.Gateway.HeartbeatEvery != "45m0s" {
		t.Fatalf("after a bad file: %+v", st)
	}
	g.WaitLog(within, "config reload refused")

	// SIGHUP reloads at once (the poll would too, within 2 s).
	e.PatchConfig(map[string]any{"heartbeat.interval": "45m", "channels.forward": []string{"webhook:ops"}})
	g.Signal(syscall.SIGHUP)
	e.Eventually(within, "SIGHUP reload", func() bool {
		st := status()
		return st.Gateway.ConfigError == "" && slices.Equal(st.Gateway.Forward, []string{"webhook:ops"})
	})
	g.Stop()
}
