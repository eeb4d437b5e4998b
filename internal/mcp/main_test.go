package mcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/mcp/mcptest"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

// TestMain doubles as the exec sandbox supervisor and as the stdio MCP
// server the tests configure (this binary, re-executed with
// mcptest.Command inside the sandbox).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	if len(os.Args) > 1 && os.Args[1] == mcptest.Command {
		os.Exit(mcptest.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// env is a data dir with a workspace holding the test server binary, and
// the exec sandbox over them.
type env struct {
	root, ws, bin string
	sb            *sandbox.Runner
	clk           *clock.Fake
	reg           *tools.Registry
}

func newEnv(t testing.TB) *env {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	bin, err := mcptest.Install(ws)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Workspace: ws, DataDir: root})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no exec sandbox here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &env{root: root, ws: ws, bin: bin, sb: sb, clk: clock.NewFake(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)), reg: tools.NewRegistry()}
}

// stdio is a server config running the test server with args.
func (e *env) stdio(args ...string) mcp.ServerConfig {
	return mcp.ServerConfig{Command: e.bin, Args: append([]string{mcptest.Command}, args...)}
}

func (e *env) manager(t *testing.T, servers map[string]mcp.ServerConfig, adjust ...func(*mcp.Options)) *mcp.Manager {
	t.Helper()
	cfg := mcp.DefaultConfig()
	cfg.Servers = servers
	o := mcp.Options{Config: cfg, Workspace: e.ws, CacheDir: filepath.Join(e.root, "mcp"), Sandbox: e.sb,
		Registry: e.reg, Clock: e.clk}
	for _, f := range adjust {
		f(&o)
	}
	m, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

// run calls a registered tool the way the agent does.
func (e *env) run(t *testing.T, name, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.reg.Run(ctx, llm.ToolCall{Name: name, Arguments: args})
}

func (e *env) mustRun(t *testing.T, name, args string) string {
	t.Helper()
	out, err := e.run(t, name, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	return out
}

// pidOf is the server's process id, asked through its pid tool.
func (e *env) pidOf(t *testing.T, server string) int {
	t.Helper()
	out := e.mustRun(t, server+"__pid", "{}")
	start := strings.Index(out, "\n<mcp-output")
	body := out[strings.Index(out[start+1:], "\n")+start+2:]
	body = strings.TrimSuffix(body, "\n</mcp-output>")
	var pid int
	for _, r := range body {
		if r < '0' || r > '9' {
			t.Fatalf("pid output %q", out)
		}
		pid = pid*10 + int(r-'0')
	}
	return pid
}

// waitGone polls (a real child process, so with a deadline) until pid has
// exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("server process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(reg *tools.Registry, prefix string) []string {
	var out []string
	for _, d := range reg.Defs() {
		if strings.HasPrefix(d.Name, prefix) {
			out = append(out, d.Name)
		}
	}
	return out
}

func newEnvClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)) }

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
