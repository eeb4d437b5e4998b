package gateway

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/runtime"
)

// A running gateway with the default config follows config.json: a live
// key is in effect (and shown) after the next poll, a restart-only key is
// listed as needing a restart while the effective value stays, a bad file
// is refused naming its dotted key with the old config kept, and a reload
// request (SIGHUP) applies at once without waiting for the poll.
func TestGatewayFollowsConfigFile(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	reload := make(chan struct{})
	ctx := context.Background()
	g, err := Start(ctx, DaemonOptions{Runtime: runtime.Options{Paths: p, Config: config.Default(), Clock: clk}, Reload: reload})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown(ctx)
	status := func() api.GatewayState {
		t.Helper()
		st, err := g.status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// polled advances the fake clock one poll at a time until a reload
	// attempt leaves cond holding.
	polled := func(what string, cond func(api.GatewayState) bool) api.GatewayState {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			next := g.reload.attempted()
			if st := status(); cond(st) {
				return st
			}
			clk.Advance(DefaultConfigPoll)
			select {
			case <-next:
			case <-time.After(5 * time.Millisecond): // the watcher had not armed its timer yet: advance again
			case <-deadline:
				t.Fatalf("%s: never seen; status %+v", what, status())
			}
		}
	}
	set := func(key, value string) {
		t.Helper()
		if err := config.Set(p.Config(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	start := status()
	if start.HeartbeatEvery != "30m0s" || len(start.RestartNeeded) != 0 || start.ConfigError != "" {
		t.Fatalf("start status %+v", start)
	}

	set("heartbeat.interval", "45m")
	st := polled("heartbeat.interval applied", func(s api.GatewayState) bool { return s.HeartbeatEvery == "45m0s" })
	if len(st.RestartNeeded) != 0 || g.rt.Heartbeat().Interval() != 45*time.Minute {
		t.Fatalf("after a live key: %+v (heartbeat interval %s)", st, g.rt.Heartbeat().Interval())
	}

	set("sentinel.interval", "20m")
	st = polled("restart needed for sentinel.interval", func(s api.GatewayState) bool { return slices.Contains(s.RestartNeeded, "sentinel.interval") })
	if st.SentinelEvery != start.SentinelEvery || st.HeartbeatEvery != "45m0s" {
		t.Fatalf("a restart-only key changed the effective values: %+v", st)
	}

	good, err := os.ReadFile(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Config(), []byte(`{"heartbeat":{"interval":"soon"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st = polled("bad file refused", func(s api.GatewayState) bool { return s.ConfigError != "" })
	if !strings.Contains(st.ConfigError, "heartbeat.interval") || st.HeartbeatEvery != "45m0s" ||
		!slices.Contains(st.RestartNeeded, "sentinel.interval") {
		t.Fatalf("after a bad file: %+v", st)
	}

	// A reload request applies at once: the fake clock does not move.
	if err := os.WriteFile(p.Config(), good, 0o600); err != nil {
		t.Fatal(err)
	}
	set("channels.forward", "telegram:42")
	next := g.reload.attempted()
	reload <- struct{}{}
	<-next
	if st = status(); !slices.Equal(st.Forward, []string{"telegram:42"}) || st.ConfigError != "" {
		t.Fatalf("reload request not applied: %+v", st)
	}
	if got := g.rt.Config().Channels.Forward; !slices.Equal(got, []string{"telegram:42"}) {
		t.Fatalf("runtime forward %v", got)
	}
}
