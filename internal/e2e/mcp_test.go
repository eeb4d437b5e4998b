package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/sandbox"
)

// mcpServerBin builds the test MCP server (internal/mcp/mcptest/server,
// the official SDK on stdio) into dir.
func mcpServerBin(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "mcp-test-server")
	cmd := exec.Command("go", "build", "-o", out, "github.com/raven-agent/raven/internal/mcp/mcptest/server")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP test server: %v\n%s", err, b)
	}
	return out
}

// withMCPServers installs the server binary in e's workspace (the sandbox
// shows a server nothing else) and configures it under each name with
// `raven config set mcp.servers.NAME.command`.
func withMCPServers(t *testing.T, e *Env, server string, names ...string) {
	t.Helper()
	bin := e.Path("workspace", "mcp-test-server")
	raw, err := os.ReadFile(server)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		e.MustRun("config", "set", "mcp.servers."+n+".command", bin)
	}
}

// §1: a stdio MCP server configured with `raven config set` is reached by
// `raven mcp list|tools|call`, by a `chat -m` turn whose model calls
// NAME__tool, and by doctor; an idle gateway with five configured servers
// starts none of them.
func TestMCPThroughTheBinary(t *testing.T) {
	if !sandbox.Detect().Available() {
		t.Skip("no OS sandbox: stdio MCP servers are refused by default")
	}
	server := mcpServerBin(t, t.TempDir())

	t.Run("cli", func(t *testing.T) {
		e := newEnv(t, Options{})
		withMCPServers(t, e, server, "t")
		r := e.MustRun("mcp", "list")
		if !strings.Contains(r.Stdout, "t     stdio") || !strings.Contains(r.Stdout, "not listed yet") {
			t.Fatalf("mcp list before any start:\n%s", r)
		}
		r = e.MustRun("mcp", "tools", "t")
		if !strings.Contains(r.Stdout, "t__echo") || !strings.Contains(r.Stdout, "Echo the text back.") {
			t.Fatalf("mcp tools:\n%s", r)
		}
		var list []struct {
			Exposed string `json:"exposed"`
		}
		e.MustRun("mcp", "tools", "t", "--json").JSON(t, &list)
		if len(list) != 8 {
			t.Fatalf("mcp tools --json: %+v", list)
		}
		if r = e.MustRun("mcp", "list"); !strings.Contains(r.Stdout, " 8 ") {
			t.Fatalf("mcp list after a listing (cached):\n%s", r)
		}
		r = e.MustRun("mcp", "call", "t", "add", "--args", `{"a":2,"b":3}`)
		if strings.TrimSpace(r.Stdout) != "5" {
			t.Fatalf("mcp call add:\n%s", r)
		}
		r = e.Run("mcp", "call", "t", "fail", "--json")
		if r.Code == 0 || !strings.Contains(r.Stdout, `"is_error": true`) || !strings.Contains(r.Stderr, "reported an error") {
			t.Fatalf("mcp call fail:\n%s", r)
		}
		r = e.Run("mcp", "call", "t", "crash")
		if r.Code == 0 || !strings.Contains(r.Stderr, "server crashed") || !strings.Contains(r.Stderr, "exited with status 3") {
			t.Fatalf("mcp call crash:\n%s", r)
		}
		r = e.Run("mcp", "tools", "nope")
		if r.Code == 0 || !strings.Contains(r.Stderr, `unknown server "nope"`) {
			t.Fatalf("unknown server:\n%s", r)
		}
		r = e.Run("doctor")
		if !strings.Contains(r.Stdout, "mcp t") || !strings.Contains(r.Stdout, "started and listed 8 tools") {
			t.Fatalf("doctor:\n%s", r)
		}
	})

	t.Run("chat", func(t *testing.T) {
		e := newEnv(t, Options{})
		withMCPServers(t, e, server, "t")
		e.Model.Enqueue(fakeopenai.Call("t__echo", map[string]any{"text": "from the model"}))
		e.Model.On(fakeopenai.AfterToolResult(), func(r fakeopenai.Request) fakeopenai.Reply {
			return fakeopenai.Text("The server said: " + r.Last().Content)
		})
		r := e.MustRun("chat", "-m", "use the echo tool")
		if !strings.Contains(r.Stdout, "echo: from the model") {
			t.Fatalf("chat -m with an MCP tool:\n%s\n%s", r, e.Model)
		}
		reqs := e.Model.Requests()
		if len(reqs) != 2 || !reqs[0].HasTool("t__echo") || !strings.Contains(reqs[1].Last().Content, `untrusted content from that server`) {
			t.Fatalf("the model was not offered t__echo or not told the result is untrusted:\n%s", e.Model)
		}
	})

	t.Run("idle gateway starts none", func(t *testing.T) {
		rss := func(names ...string) int {
			e := newEnv(t, Options{})
			if len(names) > 0 {
				withMCPServers(t, e, server, names...)
			}
			g := e.StartGateway()
			defer g.Stop()
			if kids := childrenOf(t, g.PID()); len(kids) != 0 {
				t.Fatalf("an idle gateway with %d MCP servers has child processes %v", len(names), kids)
			}
			return g.RSSKiB()
		}
		var none, five []int
		for range 3 {
			none = append(none, rss())
			five = append(five, rss("a", "b", "c", "d", "e"))
		}
		t.Logf("gateway idle VmRSS: no MCP servers %v KiB, five configured unused servers %v KiB", none, five)
	})
}

// childrenOf lists the child processes of pid (every thread's).
func childrenOf(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}
