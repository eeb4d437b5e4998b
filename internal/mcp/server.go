package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one configured server's lifecycle: stopped, starting, running;
// a crash or a hang stops it and sets the earliest restart.
type server struct {
	name string
	cfg  ServerConfig
	m    *Manager

	mu       sync.Mutex
	conn     *conn // nil when stopped
	starting chan struct{}
	gen      int
	inflight int
	lastUse  time.Time
	failures int
	retryAt  time.Time
	lastErr  error
	closed   bool
	// listed is the last tool list (from a start, or the disk cache).
	listed []CachedTool
}

// conn is one running session and how to end it.
type conn struct {
	sess *sdk.ClientSession
	// ended closes when the process exited (stdio) or the session ended.
	ended <-chan struct{}
	// why says how it ended, once ended is closed.
	why func() string
	// kill ends it at once (stdio: the sandbox kills the process group).
	kill func()
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.name, Transport: "http", Target: s.cfg.URL, Running: s.conn != nil, Tools: len(s.listed)}
	if s.cfg.Stdio() {
		st.Transport, st.Target = "stdio", strings.TrimPrefix(shellLine(s.cfg.Command, s.cfg.Args), "exec ")
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}

// known reports whether the server's tools are known, or it cannot be
// tried again yet: Prepare skips it either way.
func (s *server) known() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed != nil || s.closed || s.m.o.Clock.Now().Before(s.retryAt)
}

func (s *server) toolInfos() []ToolInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ToolInfo, 0, len(s.listed))
	for _, t := range s.listed {
		exposed, _ := exposedName(s.name, t.Name)
		out = append(out, ToolInfo{Name: t.Name, Exposed: exposed, Description: t.Description, InputSchema: schemaOf(t.InputSchema)})
	}
	return out
}

// acquire returns the running session, starting the server if it is
// stopped, and counts a use until release is called.
func (s *server) acquire(ctx context.Context) (*conn, func(), error) {
	s.mu.Lock()
	for s.starting != nil {
		ch := s.starting
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("mcp server %q: waiting for it to start: %w", s.name, ctx.Err())
		}
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: server %q", ErrClosed, s.name)
	}
	now := s.m.o.Clock.Now()
	if s.conn == nil && now.Before(s.retryAt) {
		err := fmt.Errorf("%w: server %q failed (%v); it is tried again in %s", ErrBackoff, s.name, s.lastErr, s.retryAt.Sub(now).Round(time.Millisecond))
		s.mu.Unlock()
		return nil, nil, err
	}
	var c *conn
	if s.conn == nil {
		start := make(chan struct{})
		s.starting = start
		s.mu.Unlock()
		started, listed, err := s.start(ctx)
		c = started
		s.mu.Lock()
		s.starting = nil
		close(start)
		if err == nil && s.closed {
			c.kill()
			err = fmt.Errorf("%w: server %q", ErrClosed, s.name)
		}
		if err != nil {
			s.failLocked(err)
			s.mu.Unlock()
			return nil, nil, err
		}
		s.gen++
		s.conn, s.listed = c, listed
		s.failures = 0
		s.inflight++
		s.lastUse = s.m.o.Clock.Now()
		gen := s.gen
		s.m.wg.Add(2)
		go s.watch(gen, c)
		go s.idle(gen, c)
		s.mu.Unlock()
		s.m.saveCache(s.name, s.cfg, listed)
		s.m.offer(s.name, listed)
	} else {
		c = s.conn
		s.inflight++
		s.lastUse = s.m.o.Clock.Now()
		s.mu.Unlock()
	}
	var once sync.Once
	return c, func() {
		once.Do(func() {
			s.mu.Lock()
			s.inflight--
			s.lastUse = s.m.o.Clock.Now()
			s.mu.Unlock()
		})
	}, nil
}

// failLocked records a failure and schedules the earliest restart.
func (s *server) failLocked(err error) {
	s.failures++
	s.lastErr = err
	s.retryAt = s.m.o.Clock.Now().Add(backoff(s.failures))
}

// start spawns or dials the server, initializes the session and lists its
// tools, all within the call timeout.
func (s *server) start(ctx context.Context) (*conn, []CachedTool, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.CallTimeout.D(), errCallTimeout)
	defer cancel()
	var (
		c   *conn
		err error
	)
	if s.cfg.Stdio() {
		c, err = s.m.startStdio(ctx, s.name, s.cfg)
	} else {
		c, err = s.m.startHTTP(ctx, s.name, s.cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	listed, err := listTools(ctx, c.sess)
	if err != nil {
		c.kill()
		return nil, nil, s.explain(ctx, c, "list tools", err)
	}
	s.m.o.Logger.Info("mcp server started", "server", s.name, "tools", len(listed))
	return c, listed, nil
}

func listTools(ctx context.Context, sess *sdk.ClientSession) ([]CachedTool, error) {
	listed := []CachedTool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(listed) == maxTools {
			break
		}
		listed = append(listed, CachedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return listed, nil
}

// explain turns a failed request into the error the model or owner reads:
// a timeout (the server is stopped), a crash (with how the process ended),
// or the server's own error.
func (s *server) explain(ctx context.Context, c *conn, what string, err error) error {
	switch {
	case errors.Is(context.Cause(ctx), errCallTimeout):
		return fmt.Errorf("%w: server %q gave no answer to %s within %s, so it was stopped; it starts again on a later call",
			ErrTimeout, s.name, what, s.cfg.CallTimeout.D())
	case ctx.Err() != nil:
		return fmt.Errorf("mcp server %q: %s: %w", s.name, what, context.Cause(ctx))
	}
	select {
	case <-c.ended:
		return fmt.Errorf("%w: server %q %s during %s; it restarts on a later call", ErrCrashed, s.name, c.why(), what)
	default:
	}
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		// Not an answer from a live server but a broken connection (EOF,
		// closed): the process is going. Wait, bounded by the call, to say
		// how it ended.
		select {
		case <-c.ended:
			return fmt.Errorf("%w: server %q %s during %s; it restarts on a later call", ErrCrashed, s.name, c.why(), what)
		case <-ctx.Done():
		}
		return fmt.Errorf("%w: server %q closed the connection during %s", ErrCrashed, s.name, what)
	}
	return fmt.Errorf("mcp server %q: %s: %w", s.name, what, err)
}

// errCallTimeout is the cause of a context the call timeout ended, told
// apart from a caller's own deadline (the agent's tool timeout).
var errCallTimeout = errors.New("mcp call timeout")

// call runs one tool call within the call timeout. A timeout or a crash
// stops the server (the next call restarts it after the backoff).
func (s *server) call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return Result{}, fmt.Errorf("mcp server %q: tool %s: arguments must be a JSON object", s.name, tool)
	}
	c, release, err := s.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()
	cctx, cancel := context.WithTimeoutCause(ctx, s.cfg.CallTimeout.D(), errCallTimeout)
	defer cancel()
	res, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		err = s.explain(cctx, c, "tools/call "+tool, err)
		if errors.Is(err, ErrTimeout) || errors.Is(err, ErrCrashed) {
			s.fail(c, err)
		}
		return Result{}, err
	}
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
	return Result{Text: render(res, s.m.o.MaxResult), IsError: res.IsError}, nil
}

// fail stops the server after a crash or hang, if c is still its session.
func (s *server) fail(c *conn, err error) {
	s.mu.Lock()
	mine := s.conn == c
	if mine {
		s.conn = nil
		s.failLocked(err)
	}
	s.mu.Unlock()
	c.kill()
	if mine { // else watch saw it end first, and said so
		s.m.o.Logger.Warn("mcp server stopped", "server", s.name, "err", err)
	}
}

// watch notices a server that ends on its own.
func (s *server) watch(gen int, c *conn) {
	defer s.m.wg.Done()
	<-c.ended
	s.mu.Lock()
	if s.gen != gen || s.conn != c {
		s.mu.Unlock()
		return // stopped on purpose
	}
	s.conn = nil
	err := fmt.Errorf("%w: server %q %s", ErrCrashed, s.name, c.why())
	s.failLocked(err)
	s.mu.Unlock()
	c.kill()
	s.m.o.Logger.Warn("mcp server ended on its own", "server", s.name, "err", err)
}

// idle stops the server once nothing used it for the idle timeout.
func (s *server) idle(gen int, c *conn) {
	defer s.m.wg.Done()
	idle := s.cfg.IdleTimeout.D()
	for {
		s.mu.Lock()
		if s.gen != gen || s.conn != c {
			s.mu.Unlock()
			return
		}
		wait := idle - s.m.o.Clock.Now().Sub(s.lastUse)
		if s.inflight > 0 {
			wait = idle
		} else if wait <= 0 {
			s.conn = nil
			s.mu.Unlock()
			s.m.o.Logger.Info("mcp server stopped after idle", "server", s.name, "idle", idle)
			s.shutdown(c)
			return
		}
		s.mu.Unlock()
		t := s.m.o.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-c.ended:
			t.Stop()
		case <-s.m.ctx.Done():
			t.Stop()
			return
		}
	}
}

// stop ends the running session on purpose (doctor's probe).
func (s *server) stop(reason string) {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		s.m.o.Logger.Debug("mcp server stopped", "server", s.name, "reason", reason)
		s.shutdown(c)
	}
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		s.shutdown(c)
	}
}

// shutdown closes the session (a stdio server sees EOF and exits) and
// kills what is left after a grace period.
func (s *server) shutdown(c *conn) {
	c.sess.Close()
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		t := s.m.o.Clock.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-c.ended:
		case <-t.C():
		case <-s.m.ctx.Done():
		}
		c.kill()
	}()
}

// stopGrace is how long a stopped server may take to exit by itself.
const stopGrace = 2 * time.Second
