package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Gateway is a running `raven gateway` process of an Env.
type Gateway struct {
	// ReadyIn is how long the gateway took from exec to an answering socket.
	ReadyIn time.Duration

	e      *Env
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{}
}

// StartGateway starts `raven gateway args...` and returns once its control
// socket accepts the operator token (polled with a deadline, no sleeps on
// behaviour). The cleanup kills it if the test did not Stop it.
func (e *Env) StartGateway(args ...string) *Gateway {
	e.T.Helper()
	g := &Gateway{e: e, log: &syncBuffer{}, exited: make(chan struct{})}
	g.cmd = e.Command(context.Background(), append([]string{"gateway"}, args...)...)
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	start := time.Now()
	if err := g.cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	go func() {
		g.cmd.Wait()
		close(g.exited)
	}()
	e.T.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Kill()
			<-g.exited
			e.T.Logf("gateway killed at cleanup; log:\n%s", g.log)
		}
	})
	deadline := time.Now().Add(DefaultReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := e.dial(ctx)
		cancel()
		if err == nil {
			c.Close()
			g.ReadyIn = time.Since(start)
			return g
		}
		select {
		case <-g.exited:
			e.T.Fatalf("gateway exited %d before ready: %v\n%s", g.cmd.ProcessState.ExitCode(), err, g.log)
		default:
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("gateway not ready within %s: %v\n%s", DefaultReadyTimeout, err, g.log)
		}
		// The socket appears asynchronously in another process: poll it.
		time.Sleep(10 * time.Millisecond)
	}
}

// Log is everything the gateway printed so far (stdout and stderr).
func (g *Gateway) Log() string { return g.log.String() }

// PID is the gateway's process id.
func (g *Gateway) PID() int { return g.cmd.Process.Pid }

// Signal sends sig (e.g. syscall.SIGHUP) to the gateway.
func (g *Gateway) Signal(sig os.Signal) {
	g.e.T.Helper()
	if err := g.cmd.Process.Signal(sig); err != nil {
		g.e.T.Fatal(err)
	}
}

// Stop sends SIGTERM and fails the test unless the gateway exits 0 within
// DefaultStopTimeout.
func (g *Gateway) Stop() {
	g.e.T.Helper()
	g.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(DefaultStopTimeout):
		g.e.T.Fatalf("gateway did not stop within %s\n%s", DefaultStopTimeout, g.log)
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		g.e.T.Fatalf("gateway exit %d\n%s", code, g.log)
	}
}

// Exited is closed when the gateway process has ended.
func (g *Gateway) Exited() <-chan struct{} { return g.exited }

// Dial connects to the gateway's control socket with the operator token.
// The cleanup closes the client.
func (g *Gateway) Dial() *controlapi.Client { return g.e.Dial() }

// Dial connects to the data dir's control socket with the operator token;
// the cleanup closes the client.
func (e *Env) Dial() *controlapi.Client {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.dial(ctx)
	if err != nil {
		e.T.Fatalf("e2e: dial control socket: %v", err)
	}
	e.T.Cleanup(func() { c.Close() })
	return c
}

func (e *Env) dial(ctx context.Context) (*controlapi.Client, error) {
	tok, err := auth.ReadTokenFile(e.Path("operator.token"))
	if err != nil {
		return nil, err
	}
	return controlapi.Dial(ctx, e.Path("raven.sock"), tok)
}

// Call is one control-API call on a fresh connection of e, failing the
// test on error.
func Call[Req, Resp any](e *Env, m api.Method[Req, Resp], req Req) Resp {
	e.T.Helper()
	c := e.Dial()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := controlapi.Invoke(ctx, c, m, req)
	if err != nil {
		e.T.Fatalf("e2e: %s: %v", m, err)
	}
	return resp
}

// Eventually polls cond every 20 ms until it holds or within passes, then
// fails with what. For state another process changes on the wall clock.
func (e *Env) Eventually(within time.Duration, what string, cond func() bool) {
	e.T.Helper()
	if err := poll(within, cond); err != nil {
		e.T.Fatalf("e2e: %s: %v", what, err)
	}
}

var errTimeout = errors.New("timed out")

func poll(within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s", errTimeout, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// WaitLog waits until the gateway's log contains s.
func (g *Gateway) WaitLog(within time.Duration, s string) {
	g.e.T.Helper()
	if err := poll(within, func() bool { return strings.Contains(g.log.String(), s) }); err != nil {
		g.e.T.Fatalf("gateway log never showed %q: %v\n%s", s, err, g.log)
	}
}

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

// RSSKiB is the gateway's resident set size from /proc (Linux), for the
// idle-memory figure.
func (g *Gateway) RSSKiB() int {
	g.e.T.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.PID()))
	if err != nil {
		g.e.T.Fatalf("e2e: read gateway rss: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kib)
			return kib
		}
	}
	g.e.T.Fatal("e2e: no VmRSS in /proc status")
	return 0
}
