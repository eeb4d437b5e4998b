package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/tools"
)

// fakeMCPTool stands in for an MCP server's tool: a schema map from
// elsewhere, registered with RegisterExternal.
type fakeMCPTool struct {
	name, desc string
	mu         sync.Mutex
	calls      []string
}

func (f *fakeMCPTool) Name() string        { return f.name }
func (f *fakeMCPTool) Description() string { return f.desc }
func (f *fakeMCPTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []any{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 100,
			"description": "the city " + f.name + " works on"}}}
}
func (f *fakeMCPTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, string(args))
	return f.name + " says: Leeds 14°C", nil
}

// With the default config and 200 external tools, the model is offered
// tool_search instead of 200 schemas; what it finds is offered in the next
// step of the same turn, and only in that turn; a hidden tool called by
// name still runs. Through the real OpenAI provider on the fake server.
func TestToolSearchThroughBuild(t *testing.T) {
	srv := fakeopenai.Start(t, fakeopenai.Options{})
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = "openai/fake"
	cfg.Providers.OpenAI = config.EndpointConfig{BaseURL: srv.BaseURL(), APIKey: "sk-test"}
	a, err := Build(context.Background(), Options{Paths: p, Config: cfg, Clock: clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })

	var weather *fakeMCPTool
	for i := range 200 {
		ft := &fakeMCPTool{name: fmt.Sprintf("srv%d__tool_%03d", i%5, i), desc: fmt.Sprintf("Does chore number %d for the owner.", i)}
		if i == 137 {
			ft = &fakeMCPTool{name: "metoffice__forecast", desc: "Today's weather forecast for a city.\nData from the met office."}
			weather = ft
		}
		a.Tools().RegisterExternal(ft)
	}

	srv.Enqueue(
		fakeopenai.Call(tools.ToolSearchName, map[string]any{"query": "weather forecast", "limit": 3}),
		fakeopenai.Call("metoffice__forecast", map[string]string{"city": "Leeds"}),
		fakeopenai.Text("It is 14°C in Leeds."),
	)
	if got := turn(t, a, "what's the weather in Leeds?"); got != "It is 14°C in Leeds." {
		t.Fatalf("reply %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if !first.HasTool(tools.ToolSearchName) || first.HasTool("metoffice__forecast") || first.HasTool("srv0__tool_000") ||
		!first.HasTool("read_file") {
		t.Fatalf("first request offers %v", first.ToolNames())
	}
	if n := strings.Count(string(first.Body), "works on"); n != 0 {
		t.Fatalf("first request carries %d external schemas", n)
	}
	if res, ok := second.ToolResult(second.Messages[len(second.Messages)-1].ToolCallID); !ok ||
		!strings.Contains(res.Content, "- metoffice__forecast: Today's weather forecast for a city.") {
		t.Fatalf("tool_search result: %+v", res)
	}
	if !second.HasTool("metoffice__forecast") || second.HasTool("srv0__tool_000") {
		t.Fatalf("second request offers %v", second.ToolNames())
	}
	if len(weather.calls) != 1 || weather.calls[0] != `{"city":"Leeds"}` {
		t.Fatalf("weather tool calls %q", weather.calls)
	}

	// A new turn starts without the activated tools; a hidden tool called
	// by name still runs, validated against its schema.
	srv.Enqueue(
		fakeopenai.Call("srv2__tool_007", map[string]string{"city": "York"}),
		fakeopenai.Call("srv2__tool_007", map[string]string{"town": "York"}),
		fakeopenai.Text("done"),
	)
	turn(t, a, "run chore 7")
	reqs = srv.Requests()[3:]
	if reqs[0].HasTool("metoffice__forecast") {
		t.Fatal("activation leaked into the next turn")
	}
	if res, _ := reqs[1].ToolResult(reqs[1].Messages[len(reqs[1].Messages)-1].ToolCallID); res.Content != "srv2__tool_007 says: Leeds 14°C" {
		t.Fatalf("hidden tool by name: %q", res.Content)
	}
	if res, _ := reqs[2].ToolResult(reqs[2].Messages[len(reqs[2].Messages)-1].ToolCallID); !strings.Contains(res.Content,
		`invalid arguments for srv2__tool_007: unexpected additional properties ["town"]`) {
		t.Fatalf("bad args to a hidden tool: %q", res.Content)
	}
}

// tools.search_threshold is applied live: lowering it below the tool count
// switches the next model step to tool_search.
func TestReconfigureSearchThreshold(t *testing.T) {
	a, _ := newApp(t, false, nil)
	for i := range 3 {
		a.Tools().RegisterExternal(&fakeMCPTool{name: fmt.Sprintf("srv__t%d", i), desc: "a chore"})
	}
	offersSearch := func() bool {
		for _, d := range a.Tools().Offered(nil) {
			if d.Name == tools.ToolSearchName {
				return true
			}
		}
		return false
	}
	if offersSearch() {
		t.Fatal("tool_search offered under the default threshold")
	}
	next := a.Config()
	next.Tools.SearchThreshold = 2
	got, err := a.Reconfigure(next)
	if err != nil || len(got.Applied) != 1 || got.Applied[0] != "tools.search_threshold" || len(got.RestartNeeded) != 0 {
		t.Fatalf("Reconfigure = %+v, %v", got, err)
	}
	if !offersSearch() {
		t.Fatal("lowered threshold not applied")
	}
}
