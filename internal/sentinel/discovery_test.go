package sentinel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// flakyDiscovery fails its first n calls, then proposes a menu.
type flakyDiscovery struct {
	mu    sync.Mutex
	fail  int
	calls int
}

func (f *flakyDiscovery) Chat(context.Context, llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.fail {
		return nil, errors.New("503 overloaded")
	}
	return &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: `{"options":[{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."}]}`}}}, nil
}
func (f *flakyDiscovery) Name() string { return "flaky" }

func (f *flakyDiscovery) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func discoveryOn(c *Config) {
	defaultPolicy(c)
	c.Discovery = true
}

// The daily discovery runs on the first tick from discovery_hour; a failed
// run is retried on a later tick the same day, after a bounded backoff,
// and once it delivered it does not run again that day.
func TestDiscoveryRetriedLaterThatDay(t *testing.T) {
	h := newSysHarness(t, discoveryOn)
	ctx := context.Background()
	disc := &flakyDiscovery{fail: 1}
	h.sys.Discoverer.Provider = disc
	h.clk.Set(time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC))
	tick := func() {
		h.prov.push(decisionJSON("skip", "", nil))
		h.sys.Runner.TickOnce(ctx)
	}
	tick()
	if disc.n() != 1 || h.postedN() != 0 {
		t.Fatalf("09:00: %d discovery calls, %d posts", disc.n(), h.postedN())
	}
	h.clk.Advance(5 * time.Minute) // inside the backoff: no retry yet
	tick()
	if disc.n() != 1 {
		t.Fatalf("retried inside the backoff: %d calls", disc.n())
	}
	h.clk.Advance(25 * time.Minute) // the next regular tick
	tick()
	if disc.n() != 2 || h.postedN() != 1 || !strings.Contains(h.posted[0].Content, "Draft the tax email") {
		t.Fatalf("09:30: %d calls, posts %+v", disc.n(), h.posted)
	}
	h.clk.Advance(30 * time.Minute)
	tick()
	if disc.n() != 2 {
		t.Fatalf("ran again after delivering: %d calls", disc.n())
	}
}

// The retries are bounded: a discovery that keeps failing stops for the
// day after DefaultDiscoveryAttempts, and runs again the next day.
func TestDiscoveryRetriesBounded(t *testing.T) {
	h := newSysHarness(t, discoveryOn)
	ctx := context.Background()
	disc := &flakyDiscovery{fail: 1000}
	h.sys.Discoverer.Provider = disc
	h.clk.Set(time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC))
	for range 28 { // every 30 minutes until 23:00
		h.prov.push(decisionJSON("skip", "", nil))
		h.sys.Runner.TickOnce(ctx)
		h.clk.Advance(30 * time.Minute)
	}
	if disc.n() != DefaultDiscoveryAttempts {
		t.Fatalf("%d attempts in a day, want %d", disc.n(), DefaultDiscoveryAttempts)
	}
	h.clk.Set(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC))
	h.prov.push(decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	if disc.n() != DefaultDiscoveryAttempts+1 {
		t.Fatalf("next day: %d attempts", disc.n())
	}
}

// Discovery is part of the Sentinel: with a model it can always be run by
// hand (`raven sentinel discover`), and the daily run is what the switch
// turns off.
func TestDiscoverySwitchOnlyTurnsOffTheDailyRun(t *testing.T) {
	h := newSysHarness(t, func(c *Config) { defaultPolicy(c); c.Discovery = false })
	ctx := context.Background()
	if h.sys.Discoverer == nil {
		t.Fatal("no discoverer with a model")
	}
	disc := &flakyDiscovery{}
	h.sys.Discoverer.Provider = disc
	h.clk.Set(time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC))
	h.prov.push(decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	if disc.n() != 0 {
		t.Fatal("daily discovery ran while switched off")
	}
	if res := h.sys.Runner.RunDiscovery(ctx); !res.Delivered {
		t.Fatalf("manual run: %+v", res)
	}
}

// An owner whose quiet hours cover discovery_hour (a night owl, quiet
// 03:00–11:00): the daily run waits for the first tick after them instead
// of spending a model call on a menu quiet hours would deny.
func TestDiscoveryWaitsOutQuietHours(t *testing.T) {
	h := newSysHarness(t, func(c *Config) {
		discoveryOn(c)
		c.Policy.QuietHours = policy.DayWindow{Start: 3 * 60, End: 11 * 60}
	})
	ctx := context.Background()
	disc := &flakyDiscovery{}
	h.sys.Discoverer.Provider = disc
	h.clk.Set(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC)) // the harness starts on the 4th
	for range 4 {                                          // 09:00 … 10:30, inside quiet hours
		at := h.clk.Now().Format("15:04")
		if out := h.sys.Runner.TickOnce(ctx); out.Route != RouteFastPathQuiet {
			t.Fatalf("%s: route %s (%s), want the quiet-hours fast path", at, out.Route, out.Decision.Reason)
		}
		h.clk.Advance(30 * time.Minute)
	}
	if disc.n() != 0 {
		t.Fatalf("discovery made %d model calls inside quiet hours", disc.n())
	}
	h.prov.push(decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx) // 11:00: quiet hours are over
	if disc.n() != 1 || h.postedN() != 1 || !strings.Contains(h.posted[0].Content, "Draft the tax email") {
		t.Fatalf("11:00: %d discovery calls, posts %+v", disc.n(), h.posted)
	}
}
