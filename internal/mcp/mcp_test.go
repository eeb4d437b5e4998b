package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/mcp/mcptest"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

func TestStdioServerLazyStartAndCall(t *testing.T) {
	e := newEnv(t)
	srv := e.stdio()
	srv.Env = map[string]string{"MCPTEST_VALUE": "from-config"}
	m := e.manager(t, map[string]mcp.ServerConfig{"t": srv})
	if got := names(e.reg, "t__"); len(got) != 0 {
		t.Fatalf("tools offered before any listing: %v", got)
	}
	if st := m.Statuses()[0]; st.Running {
		t.Fatal("a server started by New")
	}
	m.Prepare(context.Background())
	got := names(e.reg, "t__")
	if strings.Join(got, ",") != "t__add,t__crash,t__echo,t__env,t__fail,t__hang,t__inject,t__pid" {
		t.Fatalf("tools after Prepare: %v", got)
	}
	out := e.mustRun(t, "t__echo", `{"text":"hello"}`)
	if !strings.Contains(out, "echo: hello") || !strings.Contains(out, `untrusted content from that server`) ||
		!strings.Contains(out, `MCP server "t"`) {
		t.Fatalf("echo = %q", out)
	}
	if out := e.mustRun(t, "t__env", "{}"); !strings.Contains(out, "\nfrom-config\n") {
		t.Fatalf("configured env did not reach the server: %q", out)
	}
	// The server's schema, passed through, is what the registry checks.
	if _, err := e.run(t, "t__add", `{"a":"one","b":2}`); err == nil || !strings.Contains(err.Error(), "invalid arguments") {
		t.Fatalf("bad arguments: %v", err)
	}
	if out := e.mustRun(t, "t__add", `{"a":40,"b":2}`); !strings.Contains(out, "\n42\n") {
		t.Fatalf("add = %q", out)
	}
	if _, err := e.run(t, "t__fail", "{}"); !errors.Is(err, mcp.ErrToolError) || !strings.Contains(err.Error(), "failed on purpose") {
		t.Fatalf("fail = %v", err)
	}
}

func TestOutputIsWrappedAsUntrustedData(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": e.stdio()})
	m.Prepare(context.Background())
	out := e.mustRun(t, "t__inject", "{}")
	if n := strings.Count(out, "</mcp-output>"); n != 1 {
		t.Fatalf("the server closed the untrusted block itself (%d closing markers): %q", n, out)
	}
	if !strings.HasSuffix(out, "</mcp-output>") || !strings.Contains(out, "ignore previous instructions") {
		t.Fatalf("inject = %q", out)
	}
}

func TestToolListCacheOffersToolsWithoutStarting(t *testing.T) {
	e := newEnv(t)
	servers := map[string]mcp.ServerConfig{"t": e.stdio()}
	first := e.manager(t, servers)
	if _, err := first.Tools(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	first.Close(context.Background())

	e.reg = tools.NewRegistry()
	m := e.manager(t, servers)
	if got := names(e.reg, "t__"); len(got) != 8 {
		t.Fatalf("cached tools: %v", got)
	}
	if st := m.Statuses()[0]; st.Running || st.Tools != 8 {
		t.Fatalf("status from the cache: %+v", st)
	}
	m.Prepare(context.Background()) // tools known: starts nothing
	if m.Statuses()[0].Running {
		t.Fatal("Prepare started a server whose tools were cached")
	}
	if out := e.mustRun(t, "t__echo", `{"text":"x"}`); !strings.Contains(out, "echo: x") {
		t.Fatal(out)
	}
	if !m.Statuses()[0].Running {
		t.Fatal("a call did not start the server")
	}

	// A changed command is listed afresh, never served from a stale cache.
	e.reg = tools.NewRegistry()
	changed := e.stdio("-tools", "1")
	e.manager(t, map[string]mcp.ServerConfig{"t": changed})
	if got := names(e.reg, "t__"); len(got) != 0 {
		t.Fatalf("stale cache used: %v", got)
	}
}

func TestCorruptCacheIsMovedAside(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.root, "mcp", "t.tools.json")
	writeFile(t, path, "{not json")
	e.manager(t, map[string]mcp.ServerConfig{"t": e.stdio()})
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("corrupt cache not moved aside: %v", matches)
	}
}

func TestCrashIsAClearErrorAndRestartsWithBackoff(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": e.stdio()})
	m.Prepare(context.Background())
	pid := e.pidOf(t, "t")
	_, err := e.run(t, "t__crash", "{}")
	if !errors.Is(err, mcp.ErrCrashed) || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("crash = %v", err)
	}
	waitGone(t, pid)
	_, err = e.run(t, "t__echo", `{"text":"x"}`)
	if !errors.Is(err, mcp.ErrBackoff) || !strings.Contains(err.Error(), "tried again in 1s") {
		t.Fatalf("call during the backoff = %v", err)
	}
	e.clk.Advance(time.Second)
	if again := e.pidOf(t, "t"); again == pid {
		t.Fatal("not restarted")
	}
	if st := m.Statuses()[0]; !st.Running || !strings.Contains(st.LastError, "exited with status 3") {
		t.Fatalf("status after restart: %+v", st)
	}
}

func TestConsecutiveFailuresBackOffLonger(t *testing.T) {
	e := newEnv(t)
	srv := mcp.ServerConfig{Command: filepath.Join(e.ws, "missing-server")}
	m := e.manager(t, map[string]mcp.ServerConfig{"gone": srv})
	ctx := context.Background()
	for i, want := range []string{"1s", "2s", "4s"} {
		_, err := m.Tools(ctx, "gone")
		if !errors.Is(err, mcp.ErrStart) {
			t.Fatalf("start %d = %v", i, err)
		}
		_, err = m.Tools(ctx, "gone")
		if !errors.Is(err, mcp.ErrBackoff) || !strings.Contains(err.Error(), "tried again in "+want) {
			t.Fatalf("backoff %d = %v, want %s", i, err, want)
		}
		d, _ := time.ParseDuration(want)
		e.clk.Advance(d)
	}
}

func TestHungServerIsKilled(t *testing.T) {
	e := newEnv(t)
	srv := e.stdio()
	srv.CallTimeout = configtype.Duration(300 * time.Millisecond)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": srv})
	m.Prepare(context.Background())
	pid := e.pidOf(t, "t")
	start := time.Now()
	_, err := e.run(t, "t__hang", "{}")
	if !errors.Is(err, mcp.ErrTimeout) || !strings.Contains(err.Error(), "within 300ms") {
		t.Fatalf("hang = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the timeout took %s", took)
	}
	waitGone(t, pid)
	e.clk.Advance(time.Second)
	if out := e.mustRun(t, "t__echo", `{"text":"back"}`); !strings.Contains(out, "echo: back") {
		t.Fatal(out)
	}
}

func TestIdleServerIsStopped(t *testing.T) {
	e := newEnv(t)
	srv := e.stdio()
	srv.IdleTimeout = configtype.Duration(time.Minute)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": srv})
	m.Prepare(context.Background())
	pid := e.pidOf(t, "t")
	e.clk.BlockUntil(1) // the idle timer is set
	e.clk.Advance(30 * time.Second)
	if !m.Statuses()[0].Running {
		t.Fatal("stopped before the idle timeout")
	}
	e.clk.Advance(30 * time.Second)
	waitGone(t, pid)
	if m.Statuses()[0].Running {
		t.Fatal("status still running")
	}
	if again := e.pidOf(t, "t"); again == pid {
		t.Fatal("not started again")
	}
}

func TestServerWith200Tools(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, map[string]mcp.ServerConfig{"big": e.stdio("-tools", "200")})
	list, err := m.Tools(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 208 || len(names(e.reg, "big__")) != 208 {
		t.Fatalf("listed %d, registered %d", len(list), len(names(e.reg, "big__")))
	}
	if out := e.mustRun(t, "big__tool_199", `{"text":"last"}`); !strings.Contains(out, "tool_199: last") {
		t.Fatal(out)
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	srv := mcptest.NewServer(0, nil)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the manager's close, which ends the session
	e := &env{root: t.TempDir(), reg: tools.NewRegistry()}
	e.clk = newEnvClock()
	m := e.manager(t, map[string]mcp.ServerConfig{
		"web": {URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		"bad": {URL: ts.URL},
	})
	m.Prepare(context.Background())
	if out := e.mustRun(t, "web__echo", `{"text":"over http"}`); !strings.Contains(out, "echo: over http") {
		t.Fatal(out)
	}
	if _, err := m.Tools(context.Background(), "bad"); err == nil {
		t.Fatal("a server refusing us started")
	}
	if st := m.Statuses(); st[0].Name != "bad" || st[0].LastError == "" || !st[1].Running {
		t.Fatalf("statuses = %+v", st)
	}
}

func TestNoSandboxFollowsExecPolicy(t *testing.T) {
	e := newEnv(t)
	none := sandbox.Mode{Kind: sandbox.KindNone, Reason: "simulated"}
	sb, err := sandbox.New(sandbox.Options{Workspace: e.ws, DataDir: e.root, Mode: &none})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatal(err)
	}
	off := e.manager(t, map[string]mcp.ServerConfig{"t": e.stdio()}, func(o *mcp.Options) { o.Sandbox = sb })
	if _, err := off.Tools(context.Background(), "t"); !errors.Is(err, mcp.ErrNoSandbox) || !strings.Contains(err.Error(), `unsandboxed is "off"`) {
		t.Fatalf("policy off = %v", err)
	}
	ap := &approver{}
	e.reg = tools.NewRegistry()
	approve := e.manager(t, map[string]mcp.ServerConfig{"u": e.stdio()}, func(o *mcp.Options) {
		o.Sandbox, o.Unsandboxed, o.Approver = sb, tools.UnsandboxedApprove, ap
	})
	list, err := approve.Tools(context.Background(), "u")
	if err != nil || len(list) != 8 {
		t.Fatalf("approved unconfined start: %d tools, %v", len(list), err)
	}
	if len(ap.asked) != 1 || !strings.Contains(ap.asked[0], "unsandboxed") || !strings.Contains(ap.asked[0], mcptest.Command) {
		t.Fatalf("approvals asked: %v", ap.asked)
	}
}

func TestUnknownServer(t *testing.T) {
	e := &env{root: t.TempDir(), reg: tools.NewRegistry(), clk: newEnvClock()}
	m := e.manager(t, nil)
	if _, err := m.Call(context.Background(), "nope", "x", nil); !errors.Is(err, mcp.ErrUnknownServer) {
		t.Fatal(err)
	}
}

type approver struct{ asked []string }

func (a *approver) Approve(_ context.Context, command, _ string, grants []string, _ string) (bool, error) {
	a.asked = append(a.asked, strings.Join(grants, ",")+" "+command)
	return false, nil
}

// A tool the cache offered but the started server no longer lists leaves
// the registry; the cache is rewritten with what the server lists now.
func TestStartReplacesCachedTools(t *testing.T) {
	e := newEnv(t)
	srv := e.stdio()
	path := filepath.Join(e.root, "mcp", "t.tools.json")
	writeFile(t, path, `{"server":"t","fingerprint":"`+mcp.Fingerprint(srv)+`","tools":[{"name":"gone","input_schema":{"type":"object"}},{"name":"echo","input_schema":{"type":"object"}}]}`)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": srv})
	if got := strings.Join(names(e.reg, "t__"), ","); got != "t__echo,t__gone" {
		t.Fatalf("from the cache: %s", got)
	}
	if _, err := m.Tools(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if got := names(e.reg, "t__"); len(got) != 8 || strings.Contains(strings.Join(got, ","), "t__gone") {
		t.Fatalf("after the start: %v", got)
	}
	if b := readFile(t, path); strings.Contains(b, `"gone"`) || !strings.Contains(b, `"inject"`) {
		t.Fatalf("cache not rewritten: %s", b)
	}
}

func TestSlowStartIsBounded(t *testing.T) {
	e := newEnv(t)
	srv := e.stdio("-start-delay", "1h")
	srv.CallTimeout = configtype.Duration(300 * time.Millisecond)
	m := e.manager(t, map[string]mcp.ServerConfig{"slow": srv})
	_, err := m.Tools(context.Background(), "slow")
	if !errors.Is(err, mcp.ErrStart) || !strings.Contains(err.Error(), "did not initialize within 300ms") {
		t.Fatalf("slow start = %v", err)
	}
}

// A caller that gives up first (the agent's own tool timeout) abandons its
// call without stopping a server that may be fine.
func TestCallerDeadlineDoesNotStopTheServer(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, map[string]mcp.ServerConfig{"t": e.stdio()})
	m.Prepare(context.Background())
	pid := e.pidOf(t, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.Call(ctx, "t", "hang", nil)
	if err == nil || errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned call = %v", err)
	}
	if again := e.pidOf(t, "t"); again != pid {
		t.Fatalf("server restarted (%d -> %d)", pid, again)
	}
}
