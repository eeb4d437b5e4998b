package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/sandbox"
)

// childEnv, when set, makes the test binary run as `raven` itself, so tests
// start real gateway processes without building the binary.
const childEnv = "RAVEN_CMD_TEST_CHILD"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise()) // the exec sandbox re-executes this binary
	}
	if os.Getenv(childEnv) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/chzyer/readline.DefaultOnWidthChanged.func1.1"))
}

// gatewayChild is a `raven gateway` child process (this test binary re-run
// as raven).
type gatewayChild struct {
	dataDir string
	cmd     *exec.Cmd
	log     *lockedBuffer
	exited  chan struct{}
}

// startGatewayChild runs `raven gateway` on dataDir and waits until its
// control socket answers with the operator token. The cleanup kills it if
// the test left it running.
func startGatewayChild(t *testing.T, dataDir string, args ...string) *gatewayChild {
	t.Helper()
	g := &gatewayChild{dataDir: dataDir, log: &lockedBuffer{}, exited: make(chan struct{})}
	g.cmd = exec.Command(os.Args[0], append(append([]string{"--data-dir", dataDir}, args...), "gateway")...)
	for _, kv := range os.Environ() {
		// Keep the machine's model, secrets and data dir out of the child.
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAVEN_") || strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") {
			continue
		}
		g.cmd.Env = append(g.cmd.Env, kv)
	}
	g.cmd.Env = append(g.cmd.Env, childEnv+"=1")
	g.cmd.Stderr = g.log
	g.cmd.WaitDelay = 5 * time.Second // never hang on a pipe a stray grandchild holds
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g.cmd.Wait()
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := chat.DialGateway(ctx, filepath.Join(dataDir, "raven.sock"), filepath.Join(dataDir, "operator.token"))
		cancel()
		if err == nil {
			c.Close()
			return g
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited before ready\n%s", g.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready within 20s: %v\n%s", err, g.log.String())
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for behaviour
	}
}

// dial connects with the operator token; the cleanup closes the client.
func (g *gatewayChild) dial(t *testing.T) *controlapi.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := chat.DialGateway(ctx, filepath.Join(g.dataDir, "raven.sock"), filepath.Join(g.dataDir, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stop ends the gateway with SIGTERM and fails the test unless it exits 0.
func (g *gatewayChild) stop(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway did not stop within 20s\n%s", g.log.String())
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, g.log.String())
	}
}

// lockedBuffer is written by one goroutine while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// writeScript writes a scripted-model file and returns the --model value.
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

func writeFile0600(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
