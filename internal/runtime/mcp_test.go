package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/mcp/mcptest"
	"github.com/raven-agent/raven/internal/spine"
)

// withMCPServer configures, over the default config, this test binary as
// the stdio MCP server "t", installed in the workspace where the sandbox
// shows it.
func withMCPServer(t *testing.T) func(*Options) {
	return func(o *Options) {
		if err := os.MkdirAll(o.Paths.Workspace(), 0o700); err != nil {
			t.Fatal(err)
		}
		bin, err := mcptest.Install(o.Paths.Workspace())
		if err != nil {
			t.Fatal(err)
		}
		o.Config.MCP.Servers = map[string]mcp.ServerConfig{"t": {Command: bin, Args: []string{mcptest.Command}}}
	}
}

// TestMCPToolThroughRuntime: with the default config and one configured
// stdio server, Build starts nothing; the first turn lists the server's
// tools so the model is offered t__echo, calls it, and reads the result as
// untrusted data from server "t". Close stops the server.
func TestMCPToolThroughRuntime(t *testing.T) {
	if !sandboxAvailable() {
		t.Skip("no OS sandbox on this machine")
	}
	prov := llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{ID: "m1", Name: "t__echo", Arguments: `{"text":"through the runtime"}`}}},
		{Content: "done"},
	})
	a, _ := newApp(t, false, prov, withMCPServer(t))
	if st := a.MCP().Statuses(); len(st) != 1 || st[0].Running {
		t.Fatalf("after Build: %+v", st)
	}
	tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "local", Content: "echo it"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Wait(context.Background())
	if err != nil || res.Err != nil || res.Reply != "done" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	offered := false
	for _, d := range prov.Requests()[0].Tools {
		offered = offered || d.Name == "t__echo"
	}
	if !offered {
		t.Fatal("the model was not offered t__echo")
	}
	got := lastToolResult(t, prov)
	if !strings.Contains(got, "echo: through the runtime") || !strings.Contains(got, `untrusted content from that server`) {
		t.Fatalf("tool result = %q", got)
	}
	if _, err := os.Stat(filepath.Join(a.Paths().Root, "mcp", "t.tools.json")); err != nil {
		t.Fatalf("tool list not cached: %v", err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := a.MCP().Statuses(); st[0].Running {
		t.Fatal("Close left the server running")
	}
}
