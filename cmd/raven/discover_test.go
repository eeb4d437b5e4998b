package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/wake"
)

// `raven sentinel discover` with no gateway runs discovery here (the menu
// reaches the terminal, through the default policy); with a gateway
// holding the data dir it queues a discovery trigger for it instead.
func TestSentinelDiscoverCLI(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "menu.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[{"name":"propose_tasks","arguments":
		{"title":"Today I could:","options":[{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."}]}}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The shipped policy, minus quiet hours so the test passes at any hour.
	cfg := `{"sentinel":{"policy":{"quiet_hours":{"start":"00:00","end":"00:00"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runRaven(t, "", "--data-dir", dir, "--model", "scripted:"+script, "sentinel", "discover")
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"Draft the tax email", "menu delivered (nudge n-"} {
		if !strings.Contains(out, want) {
			t.Fatalf("local discover lacks %q:\n%s", want, out)
		}
	}

	// No model: a clear failure, not a silent no-op.
	if out, err := runRaven(t, "", "--data-dir", t.TempDir(), "sentinel", "discover"); err == nil || !strings.Contains(err.Error(), "no model configured") {
		t.Fatalf("no model: %v\n%s", err, out)
	}

	// A running gateway (it holds gateway.lock): the request is queued.
	p, err := config.NewPaths(dir)
	if err != nil {
		t.Fatal(err)
	}
	lk := statefile.NewLock(p.GatewayLock())
	if err := lk.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	if err := os.WriteFile(p.GatewayLock(), []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runRaven(t, "", "--data-dir", dir, "--model", "scripted:"+script, "sentinel", "discover", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var res discoverResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Via != "gateway" || res.TriggerID == "" {
		t.Fatalf("%s (%v)", out, err)
	}
	pending, err := wake.NewTriggerStore(p.Triggers(), nil, nil).Pending(context.Background())
	if err != nil || len(pending) != 1 || pending[0].Kind != wake.TriggerDiscovery || pending[0].ID != res.TriggerID {
		t.Fatalf("pending %+v (%v)", pending, err)
	}
	out, _ = runRaven(t, "", "--data-dir", dir, "sentinel", "discover")
	if !strings.Contains(out, "the running gateway (pid 4242)") {
		t.Fatalf("human output: %s", out)
	}
}
