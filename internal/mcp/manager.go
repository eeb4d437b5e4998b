package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

// Errors of the MCP client; every one is wrapped with the server's name.
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("mcp: unknown server")
	// ErrStart: the server could not be started or did not initialize.
	ErrStart = errors.New("mcp: server did not start")
	// ErrCrashed: the server exited or dropped the connection.
	ErrCrashed = errors.New("mcp: server crashed")
	// ErrBackoff: the server failed recently and is not retried yet.
	ErrBackoff = errors.New("mcp: server is waiting to restart")
	// ErrTimeout: the server did not answer in time and was stopped.
	ErrTimeout = errors.New("mcp: server did not answer in time")
	// ErrNoSandbox: a stdio server cannot run confined here, and the exec
	// policy (tools.exec.unsandboxed) does not allow running it unconfined.
	ErrNoSandbox = errors.New("mcp: no sandbox for a stdio server")
	// ErrToolError: the tool ran and reported an error.
	ErrToolError = errors.New("mcp: the tool reported an error")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("mcp: closed")
)

// Restart backoff after consecutive failures: 1s, 2s, 4s … capped.
const (
	backoffBase = time.Second
	backoffMax  = 5 * time.Minute
	// maxTools bounds the tools taken from one server.
	maxTools = 1000
)

// Sandbox runs a stdio server confined; *sandbox.Runner implements it.
type Sandbox interface {
	Mode() sandbox.Mode
	Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error)
}

// Approver asks the owner to let a command run without the sandbox;
// *approvals.Store implements it.
type Approver interface {
	Approve(ctx context.Context, command, dir string, grants []string, conversation string) (remembered bool, err error)
}

// Registrar is where the servers' tools are offered to the model;
// *tools.Registry implements it.
type Registrar interface {
	RegisterExternal(tools.Tool)
	Unregister(name string)
}

// Options configure a Manager.
type Options struct {
	Config Config
	// Workspace is the stdio servers' default working directory.
	Workspace string
	// CacheDir holds each server's last tool list ("" keeps none).
	CacheDir string
	// Sandbox confines stdio servers; nil or unavailable applies
	// Unsandboxed.
	Sandbox Sandbox
	// Unsandboxed is the exec policy where no sandbox exists:
	// tools.UnsandboxedOff refuses stdio servers, tools.UnsandboxedApprove
	// asks the owner (through Approver) before starting one unconfined.
	Unsandboxed string
	Approver    Approver
	// Registry receives the tools (may be nil: the CLI calls directly).
	Registry Registrar
	// HTTP is the base client of streamable HTTP servers.
	HTTP    *http.Client
	Clock   clock.Clock
	Logger  *slog.Logger
	Version string
	// MaxResult bounds a tool result's text (default DefaultMaxResult).
	MaxResult int
}

// Manager owns every configured server: it starts one on first use, stops
// it when idle, restarts a crashed one with backoff, and keeps the
// registry's NAME__tool entries in step with what each server lists.
type Manager struct {
	o Options
	// client is made at the first start: building it touches megabytes of
	// the binary, which an idle gateway whose servers never start should
	// not pay for (idle RSS).
	clientOnce sync.Once
	client     *sdk.Client
	servers    map[string]*server
	names      []string
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	// regMu orders registry updates of concurrent listings.
	regMu      sync.Mutex
	registered map[string][]string // server -> exposed tool names
}

// New returns a manager for o.Config's servers; none is started.
func New(o Options) (*Manager, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("mcp: config: %w", err)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{}
	}
	if o.MaxResult <= 0 {
		o.MaxResult = DefaultMaxResult
	}
	if o.Unsandboxed == "" {
		o.Unsandboxed = tools.UnsandboxedOff
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	m := &Manager{o: o, servers: make(map[string]*server), names: o.Config.Names(), registered: make(map[string][]string)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, n := range m.names {
		m.servers[n] = &server{name: n, cfg: o.Config.effective(o.Config.Servers[n]), m: m}
	}
	for _, n := range m.names {
		if c, ok := m.loadCache(n); ok {
			m.servers[n].listed = c.Tools
			m.offer(n, c.Tools)
		}
	}
	return m, nil
}

// Names lists the configured servers, sorted.
func (m *Manager) Names() []string { return append([]string(nil), m.names...) }

// Status describes one server for `raven mcp list`.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // stdio | http
	Target    string `json:"target"`    // the command line or URL
	Running   bool   `json:"running"`
	// Tools is how many tools are known (listed, or cached on disk).
	Tools     int    `json:"tools"`
	LastError string `json:"last_error,omitempty"`
}

// Statuses describes every server without starting any.
func (m *Manager) Statuses() []Status {
	out := make([]Status, 0, len(m.names))
	for _, n := range m.names {
		out = append(out, m.servers[n].status())
	}
	return out
}

// ToolInfo is one tool as its server lists it.
type ToolInfo struct {
	// Name is the server's own name for the tool; Exposed is what the
	// model calls (NAME__tool).
	Name        string         `json:"name"`
	Exposed     string         `json:"exposed"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

// Tools starts the server if needed and returns its tool list (which also
// refreshes the registry and the cache).
func (m *Manager) Tools(ctx context.Context, name string) ([]ToolInfo, error) {
	s, err := m.server(name)
	if err != nil {
		return nil, err
	}
	sess, release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	_ = sess
	return s.toolInfos(), nil
}

// Result is a tool call's outcome as the server gave it, rendered as text.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

// Call calls tool (the server's own name for it) on server name with the
// JSON object args, starting the server if needed. A tool that reports an
// error is a Result with IsError, not an error.
func (m *Manager) Call(ctx context.Context, name, tool string, args json.RawMessage) (Result, error) {
	s, err := m.server(name)
	if err != nil {
		return Result{}, err
	}
	return s.call(ctx, tool, args)
}

// Check starts the server, lists its tools and stops it again: doctor's
// probe. It returns how many tools the server offers.
func (m *Manager) Check(ctx context.Context, name string) (int, error) {
	s, err := m.server(name)
	if err != nil {
		return 0, err
	}
	wasRunning := s.status().Running
	if _, release, err := s.acquire(ctx); err != nil {
		return 0, err
	} else {
		release()
	}
	n := len(s.toolInfos())
	if !wasRunning {
		s.stop("checked")
	}
	return n, nil
}

// Prepare lists, in parallel, the tools of every server whose tools are
// not known yet (no cache, never started), so a turn that is about to
// offer tools to the model offers theirs too. A server that fails is
// logged and retried at a later turn, after its backoff.
func (m *Manager) Prepare(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range m.names {
		s := m.servers[n]
		if s.known() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, release, err := s.acquire(ctx)
			if err != nil {
				if !errors.Is(err, ErrBackoff) {
					m.o.Logger.Warn("mcp server tools unavailable for this turn", "server", s.name, "err", err)
				}
				return
			}
			release()
		}()
	}
	wg.Wait()
}

// Close stops every server and waits for their processes until ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	for _, n := range m.names {
		m.servers[n].close()
	}
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: close: servers still stopping: %w", ctx.Err())
	}
}

func (m *Manager) sdkClient() *sdk.Client {
	m.clientOnce.Do(func() {
		m.client = sdk.NewClient(&sdk.Implementation{Name: "raven", Version: m.o.Version}, &sdk.ClientOptions{
			Logger: m.o.Logger.With("component", "mcp-sdk"),
		})
	})
	return m.client
}

func (m *Manager) server(name string) (*server, error) {
	s, ok := m.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (configured: %v)", ErrUnknownServer, name, m.names)
	}
	return s, nil
}

// offer puts a server's tools into the registry under NAME__tool, removing
// the ones it no longer lists.
func (m *Manager) offer(name string, listed []CachedTool) {
	if m.o.Registry == nil {
		return
	}
	m.regMu.Lock()
	defer m.regMu.Unlock()
	keep := make(map[string]bool)
	var names []string
	for _, t := range listed {
		exposed, ok := exposedName(name, t.Name)
		if !ok || keep[exposed] {
			m.o.Logger.Warn("mcp tool skipped: its name cannot be offered to the model", "server", name, "tool", t.Name)
			continue
		}
		keep[exposed] = true
		names = append(names, exposed)
		m.o.Registry.RegisterExternal(&remoteTool{m: m, server: name, remote: t.Name, exposed: exposed,
			description: describe(name, t.Description), params: schemaOf(t.InputSchema)})
	}
	for _, old := range m.registered[name] {
		if !keep[old] {
			m.o.Registry.Unregister(old)
		}
	}
	m.registered[name] = names
}

func backoff(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := backoffBase
	for i := 1; i < failures && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}
