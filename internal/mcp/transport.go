package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

// serverLifetime is the sandbox's own timeout for a stdio server: it lives
// until it is stopped (idle, crash, hang, Close), never cut by the clock of
// a one-shot command.
const serverLifetime = 100 * 365 * 24 * time.Hour

// grantUnsandboxed is the approvals contract's grant for running without
// the OS sandbox, as exec asks for it.
const grantUnsandboxed = "unsandboxed"

// startStdio runs the server's command through the exec sandbox — the
// same supervisor, Landlock rules, seccomp filter and scrubbed environment
// as exec — and speaks MCP over its stdin and stdout. Where no sandbox
// exists it follows exec's policy: refused, or unconfined after the owner
// approved it.
func (m *Manager) startStdio(ctx context.Context, name string, cfg ServerConfig) (*conn, error) {
	line := shellLine(cfg.Command, cfg.Args)
	dir := m.o.Workspace
	if cfg.Cwd != "" {
		dir = cfg.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(m.o.Workspace, dir)
		}
	}
	unconfined := false
	if m.o.Sandbox == nil || !m.o.Sandbox.Mode().Available() {
		mode := "none"
		if m.o.Sandbox != nil {
			mode = m.o.Sandbox.Mode().String()
		}
		if m.o.Sandbox == nil || m.o.Unsandboxed != tools.UnsandboxedApprove {
			return nil, fmt.Errorf("%w: server %q: stdio servers run in the exec sandbox, there is none on this machine (%s), and tools.exec.unsandboxed is %q",
				ErrNoSandbox, name, mode, m.o.Unsandboxed)
		}
		if m.o.Approver == nil {
			return nil, fmt.Errorf("%w: server %q would run without a sandbox (%s) and needs the owner's approval, which nobody can give here",
				ErrNoSandbox, name, mode)
		}
		turn, _ := tools.TurnFrom(ctx)
		if _, err := m.o.Approver.Approve(ctx, line, dir, []string{grantUnsandboxed}, turn.Conversation); err != nil {
			return nil, fmt.Errorf("%w: server %q: running it without a sandbox was not approved: %w", ErrNoSandbox, name, err)
		}
		unconfined = true
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: server %q: %v", ErrStart, name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%w: server %q: %v", ErrStart, name, err)
	}
	stderr := &tail{max: 2048}
	pctx, kill := context.WithCancel(m.ctx)
	ended := make(chan struct{})
	var (
		res  sandbox.Result
		rerr error
	)
	env := make([]string, 0, len(cfg.Env))
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		res, rerr = m.o.Sandbox.Run(pctx, sandbox.Command{
			Command: line, Dir: dir, Timeout: serverLifetime, Network: cfg.Network, Unconfined: unconfined,
			Stdin: inR, Stdout: outW, Stderr: stderr, Env: env,
		})
		// Our copies of the child's ends: closing them lets the session
		// read EOF now that the process is gone.
		inR.Close()
		outW.Close()
		close(ended)
	}()
	why := func() string {
		var b strings.Builder
		switch {
		case rerr != nil:
			b.WriteString("could not run: " + rerr.Error())
		case res.Signal != "":
			b.WriteString("was killed by " + res.Signal)
		case res.TimedOut || res.Canceled:
			b.WriteString("was stopped")
		default:
			fmt.Fprintf(&b, "exited with status %d", res.ExitCode)
		}
		if t := stderr.String(); t != "" {
			b.WriteString(" (stderr: " + t + ")")
		}
		return b.String()
	}
	var once sync.Once
	c := &conn{ended: ended, why: why, kill: func() { once.Do(kill) }}
	sess, err := m.sdkClient().Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		c.kill()
		outR.Close()
		inW.Close()
		<-ended
		switch {
		case errors.Is(context.Cause(ctx), errCallTimeout):
			return nil, fmt.Errorf("%w: server %q did not initialize within %s (%s): %v", ErrStart, name, cfg.CallTimeout.D(), why(), err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: server %q: start abandoned: %w", ErrStart, name, context.Cause(ctx))
		}
		return nil, fmt.Errorf("%w: server %q %s: %v", ErrStart, name, why(), err)
	}
	c.sess = sess
	return c, nil
}

// startHTTP connects to a streamable HTTP server, sending the configured
// headers on every request.
func (m *Manager) startHTTP(ctx context.Context, name string, cfg ServerConfig) (*conn, error) {
	hc := *m.o.HTTP
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = headerTransport{base: base, headers: cfg.Headers}
	t := &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: &hc, MaxRetries: 1,
		// Raven only calls; it needs no server-initiated stream.
		DisableStandaloneSSE: true}
	sess, err := m.sdkClient().Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: server %q at %s: %v", ErrStart, name, cfg.URL, err)
	}
	ended := make(chan struct{})
	var werr error
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		werr = sess.Wait()
		close(ended)
	}()
	why := func() string {
		if werr != nil && !errors.Is(werr, sdk.ErrConnectionClosed) {
			return "closed the session: " + werr.Error()
		}
		return "closed the session"
	}
	return &conn{sess: sess, ended: ended, why: why, kill: func() { sess.Close() }}, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// shellLine quotes command and args for the sandbox's /bin/sh -c, so each
// argument reaches the server exactly as configured.
func shellLine(command string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	for _, a := range append([]string{command}, args...) {
		parts = append(parts, shellQuote(a))
	}
	return "exec " + strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail keeps the last max bytes written: a crashed server's last words.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
}
