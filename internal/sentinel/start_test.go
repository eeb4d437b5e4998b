package sentinel

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// The first tick runs when the Sentinel starts, not one interval (30
// minutes by default) later: nothing on the fake clock advances here.
func TestSystemStartTicksAtOnce(t *testing.T) {
	p := testPaths(t.TempDir())
	cfg := DefaultConfig()
	cfg.Discovery = false // the daily menu would eat the planner script; tests that want it turn it on
	cfg.Policy.Location = time.UTC
	prov := &seqProvider{}
	prov.push(decisionJSON("skip", "", nil))
	ticks := make(chan TickRecord, 4)
	sys, err := NewSystem(SystemOptions{
		Paths: p, Config: cfg, Provider: prov, Model: "m",
		Post:   func(context.Context, spine.Message) error { return nil },
		OnTick: func(r TickRecord) { ticks <- r },
		Clock:  clock.NewFake(sysT0),
	})
	if err != nil {
		t.Fatal(err)
	}
	sys.Runner.Start(context.Background())
	defer sys.Runner.Stop()
	select {
	case r := <-ticks:
		if !r.Time.Equal(sysT0) || r.Action != ActionSkip {
			t.Fatalf("first tick %+v", r)
		}
	case <-time.After(10 * time.Second): // a guard against hanging, not a wait for behaviour
		t.Fatal("no tick at start")
	}
}
