package runtime

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

// A foreground heartbeat tick runs through the runtime's agent loop and
// delivers to the attached terminal, ahead of channels.forward.
func TestHeartbeatTickReachesAttachedTerminal(t *testing.T) {
	const tasks = "# Heartbeat\n## Tasks\n- At 9:00 on weekdays, send me the day's agenda.\n"
	decide := func(args string) llm.Turn {
		return llm.Turn{ToolCalls: []llm.ToolCall{{ID: "d1", Name: heartbeat.DecisionTool, Arguments: args}}}
	}
	cases := []struct {
		name      string
		file      string // "" : no HEARTBEAT.md
		turns     []llm.Turn
		route     heartbeat.Route
		delivered []string
	}{
		{name: "no file", route: heartbeat.RouteNoFile},
		{name: "nothing due", file: tasks, turns: []llm.Turn{decide(`{"action":"skip","reason":"not 9:00 yet"}`)}, route: heartbeat.RouteSkip},
		{name: "task due", file: tasks, turns: []llm.Turn{
			decide(`{"action":"run","tasks":"Send the agenda.","reason":"9:00 weekday"}`),
			{Content: "Agenda: standup at 10."},
		}, route: heartbeat.RouteRun, delivered: []string{"Agenda: standup at 10."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newApp(t, false, llm.NewScripted(tc.turns), func(o *Options) { o.Config.Channels.Forward = []string{"telegram:42"} })
			defer a.Close(context.Background())
			var forwarded bool
			a.Hub().Register("telegram", spine.OutletFunc(func(context.Context, spine.Message) error {
				forwarded = true
				return nil
			}))
			if tc.file != "" {
				if err := os.WriteFile(a.Paths().Heartbeat(), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var (
				mu  sync.Mutex
				got []string
			)
			// As `raven heartbeat run` does: the terminal attached as cli:direct.
			if _, err := a.Attach(context.Background(), CLIConversation, SurfaceFunc(func(_ context.Context, m spine.Message) error {
				mu.Lock()
				defer mu.Unlock()
				if m.ChatID != "direct" {
					t.Errorf("delivered to cli:%s, want cli:direct", m.ChatID)
				}
				got = append(got, m.Content)
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			o, err := a.Heartbeat().TickOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if o.Route != tc.route {
				t.Fatalf("route = %s (%s), want %s", o.Route, o.Error, tc.route)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(tc.delivered) || (len(got) > 0 && got[0] != tc.delivered[0]) {
				t.Fatalf("delivered %q, want %q", got, tc.delivered)
			}
			if forwarded {
				t.Fatal("a manual run reached channels.forward")
			}
		})
	}
}

// heartbeat.quiet_hours (default on), through the assembled runtime: in
// the owner's quiet hours (sentinel.policy's, 23:00–07:00 by default) a
// heartbeat tick with tasks makes no model call; after them it does.
func TestHeartbeatQuietHoursByDefault(t *testing.T) {
	prov := llm.NewScripted([]llm.Turn{{Content: "nothing due"}})
	a, clk := newApp(t, false, prov)
	if err := os.WriteFile(a.Paths().Heartbeat(), []byte("# Heartbeat\n## Tasks\n- At 9:00 send me the agenda.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clk.Set(time.Date(2025, 3, 5, 2, 0, 0, 0, time.UTC))
	if out, err := a.Heartbeat().TickOnce(ctx); err != nil || out.Route != heartbeat.RouteQuiet || len(prov.Requests()) != 0 {
		t.Fatalf("02:00: %+v %v, %d model calls", out, err, len(prov.Requests()))
	}
	clk.Set(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC))
	if out, _ := a.Heartbeat().TickOnce(ctx); !out.ModelCalled || len(prov.Requests()) != 1 {
		t.Fatalf("09:00: %+v, %d model calls", out, len(prov.Requests()))
	}
}
