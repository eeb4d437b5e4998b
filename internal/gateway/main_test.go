package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/sandbox"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// binDir holds the raven binary the process tests run; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	// The exec tool re-executes this binary as its sandbox supervisor.
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	dir, err := os.MkdirTemp("", "raven-gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

var build struct {
	once sync.Once
	path string
	err  error
}

// ravenBin builds the real raven binary once per test run. It is built on
// first use rather than up front so the in-process tests alone (-run) do not
// pay for a link of the whole program.
func ravenBin(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		path := filepath.Join(binDir, "raven")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/raven")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as shipped (see README)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/raven: %w\n%s", err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// raven runs one raven command against dataDir and returns its output and
// exit code. It never hangs past 30 s.
func raven(t *testing.T, dataDir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ravenBin(t), append([]string{"--data-dir", dataDir}, args...)...)
	cmd.Env = childEnv()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("raven %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// childEnv keeps the user's environment from steering the child: no model,
// secrets or data dir leak in from the machine running the tests.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAVEN_") || strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// writeScript writes a scripted-model file outside any data dir and returns
// the --model value for it.
func writeScript(t *testing.T, turns ...map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	b, err := json.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + path
}

func scriptReply(text string) map[string]any { return map[string]any{"content": text} }

func scriptTool(name string, args map[string]any) map[string]any {
	return map[string]any{"tool_calls": []map[string]any{{"name": name, "arguments": args}}}
}

// writeConfig writes config.json into dataDir; unset keys keep defaults.
func writeConfig(t *testing.T, dataDir string, cfg map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer collects a child's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gatewayProc is a `raven gateway` child process.
type gatewayProc struct {
	dataDir string
	cmd     *exec.Cmd
	log     *syncBuffer
	started time.Time
	exited  chan struct{} // closed once Wait returned
	waitErr error
}

// startGateway runs `raven gateway` on dataDir. The cleanup kills it if a
// test left it running, so a failing test never leaks a process.
func startGateway(t *testing.T, dataDir, model string) *gatewayProc {
	t.Helper()
	args := []string{"--data-dir", dataDir}
	if model != "" {
		args = append(args, "--model", model)
	}
	g := &gatewayProc{dataDir: dataDir, log: &syncBuffer{}, exited: make(chan struct{})}
	g.cmd = exec.Command(ravenBin(t), append(args, "gateway")...)
	g.cmd.Env = childEnv()
	g.cmd.Stderr = g.log
	g.started = time.Now()
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Kill()
			<-g.exited
			t.Logf("gateway log:\n%s", g.log.String())
		}
	})
	return g
}

func (g *gatewayProc) socket() string { return filepath.Join(g.dataDir, "raven.sock") }

// waitReady polls the control socket until a call authenticates with the
// operator token, and returns the time from exec to that moment.
func (g *gatewayProc) waitReady(t *testing.T) time.Duration {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := g.tryDial(); err == nil {
			took := time.Since(g.started)
			c.Close()
			return took
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited before ready: %v\n%s", g.waitErr, g.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready within 15s\n%s", g.log.String())
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not a wait for behaviour
	}
}

func (g *gatewayProc) tryDial() (*controlapi.Client, error) {
	// Dial first: the token file exists before the socket, so a dial that
	// connects always finds it.
	nc, err := net.DialTimeout("unix", g.socket(), time.Second)
	if err != nil {
		return nil, err
	}
	tok, err := auth.ReadTokenFile(filepath.Join(g.dataDir, "operator.token"))
	if err != nil {
		nc.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return controlapi.NewClient(ctx, nc, tok)
}

// dial connects with the operator token; the cleanup closes the client.
func (g *gatewayProc) dial(t *testing.T) *controlapi.Client {
	t.Helper()
	return dialToken(t, g.socket(), operatorToken(t, g.dataDir))
}

func operatorToken(t *testing.T, dataDir string) string {
	t.Helper()
	tok, err := auth.ReadTokenFile(filepath.Join(dataDir, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func dialToken(t *testing.T, socket, token string) *controlapi.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := controlapi.Dial(ctx, socket, token)
	if err != nil {
		t.Fatalf("dial %s: %v", socket, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stop sends sig and waits up to limit for the process to exit, returning
// its exit code and how long it took.
func (g *gatewayProc) stop(t *testing.T, sig syscall.Signal, limit time.Duration) (code int, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := g.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-g.exited:
	case <-time.After(limit):
		t.Fatalf("gateway did not exit within %v of %v\n%s", limit, sig, g.log.String())
	}
	return g.cmd.ProcessState.ExitCode(), time.Since(start)
}

// call is a bounded control-API call that fails the test on error.
func call[Req, Resp any](t *testing.T, c *controlapi.Client, m api.Method[Req, Resp], req Req) Resp {
	t.Helper()
	resp, err := callErr(c, m, req)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	return resp
}

func callErr[Req, Resp any](c *controlapi.Client, m api.Method[Req, Resp], req Req) (Resp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return controlapi.Invoke(ctx, c, m, req)
}

// eventually polls cond until it holds, failing after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
