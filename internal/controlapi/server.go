// Package controlapi is the gateway's JSON-RPC 2.0 control API (newline-
// delimited, unix socket and optional TLS) and its client library.
package controlapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
)

// Access is the authority a method requires.
type Access int

const (
	// Read: any authenticated principal (operator, device, captain).
	Read Access = iota
	// Control: the operator or a control (not read-only) device.
	Control
	// Operator: the operator only.
	Operator
)

func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Control:
		return "control"
	case Operator:
		return "operator"
	}
	return fmt.Sprintf("access(%d)", int(a))
}

// Allows reports whether p has access a.
func (a Access) Allows(p auth.Principal) bool {
	switch a {
	case Read:
		return true
	case Control:
		return p.IsOperator() || p.IsControlDevice()
	case Operator:
		return p.IsOperator()
	}
	return false
}

// handlerFunc serves one method. A returned *RPCError reaches the client
// as is; auth/eventlog typed errors are mapped to their codes; anything else
// becomes an internal error (logged, not sent).
type handlerFunc func(ctx context.Context, call *Call) (any, error)

// Call is one authenticated request.
type Call struct {
	Method string
	// Principal was verified against the store for this very call.
	Principal auth.Principal
	Params    json.RawMessage
	conn      *conn
}

// Notify sends a notification to the caller's connection. It never blocks;
// a connection whose queue is full is dropped (ErrConnClosed).
func (c *Call) Notify(method string, params any) error { return c.conn.Notify(method, params) }

// Notifier returns the caller's connection for notifications after the
// call has returned (e.g. ask_user pushing clarify.request).
func (c *Call) Notifier() Notifier { return c.conn }

// Notifier pushes notifications to one connection.
type Notifier interface {
	Notify(method string, params any) error
	// Principal re-verifies the connection's credential now.
	Principal(ctx context.Context) (auth.Principal, error)
	// Done is closed when the connection ends.
	Done() <-chan struct{}
}

// ErrConnClosed is returned by Notify on a closed or dropped connection.
var ErrConnClosed = errors.New("controlapi: connection closed")

// Verifier authenticates a token, now. *auth.Store implements it.
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Principal, error)
}

// Options configures a Server. Zero values take the documented defaults.
type Options struct {
	Auth   Verifier     // required
	Clock  clock.Clock  // default clock.Real()
	Logger *slog.Logger // default discards
	// MaxFrame caps inbound frames (default DefaultMaxFrame).
	MaxFrame int
	// OutboundQueue bounds each connection's queued outbound frames
	// (default 256). A client that lets it fill is dropped with a notice.
	OutboundQueue int
	// WriteTimeout bounds one write to a client (default 5s, wall clock:
	// it is a socket deadline).
	WriteTimeout time.Duration
	// HelloTimeout bounds the TLS handshake plus the wait for auth.hello on
	// a new connection (default DefaultHelloTimeout, wall clock: it is a
	// socket deadline).
	HelloTimeout time.Duration
	// MaxInFlight bounds concurrent calls per connection (default 16); the
	// reader stops reading while the bound is reached.
	MaxInFlight int
	// MaxConns bounds open connections per listener (default
	// DefaultMaxConns): each Serve has its own budget, so a flood on the TCP
	// listener cannot take the unix socket's.
	MaxConns int
	// MaxPreAuth bounds, per listener, connections that have not yet said
	// a good auth.hello (default DefaultMaxPreAuth). When it is reached the
	// oldest such connection is closed to make room, so idle strangers can
	// delay a newcomer by at most their churn, never lock it out.
	MaxPreAuth int
	// MaxPreAuthPerHost bounds pre-auth connections from one remote host on
	// a TCP listener (default DefaultMaxPreAuthPerHost); over it, that host's
	// own oldest is closed, so one stranger cannot churn everyone else's.
	MaxPreAuthPerHost int
	// OnClose, if set, is called when a connection ends, with the reason
	// ("" for a normal close by the client). For metrics and tests.
	OnClose func(reason string)
}

// Defaults for Options.
const (
	DefaultHelloTimeout      = 5 * time.Second
	DefaultMaxConns          = 256
	DefaultMaxPreAuth        = 64
	DefaultMaxPreAuthPerHost = 16
)

// Server is the control API server. Register methods with Handle, then
// Serve one or more listeners.
type Server struct {
	opts    Options
	log     *slog.Logger
	clk     clock.Clock
	started time.Time

	mu       sync.RWMutex
	handlers map[string]handler
	conns    map[*conn]struct{}
	nextID   uint64
	// refusing bounds the goroutines telling over-limit clients why.
	refusing chan struct{}
}

type handler struct {
	access Access
	fn     handlerFunc
}

// NewServer returns a server with auth.hello registered. Add the built-in
// methods with RegisterBuiltins.
func NewServer(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = DefaultMaxFrame
	}
	if opts.OutboundQueue <= 0 {
		opts.OutboundQueue = 256
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = DefaultHelloTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 16
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxPreAuth <= 0 {
		opts.MaxPreAuth = DefaultMaxPreAuth
	}
	if opts.MaxPreAuthPerHost <= 0 {
		opts.MaxPreAuthPerHost = DefaultMaxPreAuthPerHost
	}
	return &Server{
		opts: opts, log: opts.Logger, clk: opts.Clock, started: opts.Clock.Now(),
		handlers: map[string]handler{}, conns: map[*conn]struct{}{}, refusing: make(chan struct{}, 16),
	}
}

// handle registers h for method with the access it requires. Registering a
// method twice replaces it. auth.hello is reserved. It is unexported so
// every method outside this package is registered through Handle, typed by
// the contract.
func (s *Server) handle(method string, access Access, h handlerFunc) {
	if method == methodHello {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = handler{access: access, fn: h}
}

func (s *Server) lookup(method string) (handler, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.handlers[method]
	return h, ok
}

// Methods lists the registered method names (auth.hello excluded).
func (s *Server) Methods() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.handlers))
	for m := range s.handlers {
		out = append(out, m)
	}
	return out
}

// ConnCount reports the open connections.
func (s *Server) ConnCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.conns)
}

// ListenUnix listens on the unix socket at path with mode 0600. A socket
// file left by a dead gateway is removed; a live one (something accepts on
// it) is an error, as is a non-socket file at path.
func ListenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("controlapi: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("controlapi: %s: another process is serving on this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("controlapi: remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("controlapi: listen %s: %w", path, err)
	}
	// Tokens guard every call; the mode is defence in depth for the brief
	// moment between bind and chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("controlapi: chmod %s: %w", path, err)
	}
	return ln, nil
}

// ListenTLS listens on addr (host:port) with TLS 1.3 using the key pair,
// for remote devices (config gateway.tcp_listen, tls_cert, tls_key).
func ListenTLS(addr, certFile, keyFile string) (net.Listener, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("controlapi: tls key pair: %w", err)
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	if err != nil {
		return nil, fmt.Errorf("controlapi: listen %s: %w", addr, err)
	}
	return ln, nil
}

// Serve accepts connections on ln until ctx ends, then closes ln and every
// connection it accepted, and returns after their goroutines have ended.
// Serve may run concurrently on several listeners.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	b := newBudget(ln, s.opts)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				var ne net.Error
				if errors.As(aerr, &ne) && ne.Timeout() {
					continue
				}
				err = fmt.Errorf("controlapi: accept: %w", aerr)
			}
			break
		}
		c, ok := s.register(ctx, nc, b)
		if !ok {
			s.refuse(nc, &wg)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve()
		}()
	}
	ln.Close()
	wg.Wait()
	return err
}

func (s *Server) register(ctx context.Context, nc net.Conn, b *budget) (*conn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !b.admit(hostOf(nc)) {
		return nil, false
	}
	s.nextID++
	c := newConn(ctx, s, nc, s.nextID)
	c.budget = b
	b.add(c)
	s.conns[c] = struct{}{}
	return c, true
}

// authenticated moves c out of its listener's pre-auth set.
func (s *Server) authenticated(c *conn) {
	s.mu.Lock()
	c.budget.authenticated(c)
	s.mu.Unlock()
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	c.budget.remove(c)
	s.mu.Unlock()
}

// refuse tells an over-limit client why, off the accept loop (a TLS client
// would make the write wait for its handshake) and without letting it hold
// us up; past a few concurrent refusals the rest are just closed.
func (s *Server) refuse(nc net.Conn, wg *sync.WaitGroup) {
	s.log.Warn("controlapi: connection refused: too many connections", "max", s.opts.MaxConns, "remote", nc.RemoteAddr().String())
	select {
	case s.refusing <- struct{}{}:
	default:
		nc.Close()
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-s.refusing }()
		b, _ := json.Marshal(response{JSONRPC: jsonrpcVersion, Error: Errorf(CodeUnavailable, "too many connections")})
		_ = nc.SetDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = nc.Write(append(b, '\n'))
		nc.Close()
	}()
}

// Broadcast sends a notification to every authenticated connection whose
// principal — re-verified now — passes filter (nil: all). It never blocks
// on a client and returns how many connections it queued the notification on.
func (s *Server) Broadcast(method string, params any, filter func(auth.Principal) bool) int {
	frame, err := encodeNotification(method, params)
	if err != nil {
		s.log.Error("controlapi: broadcast encode", "method", method, "err", err)
		return 0
	}
	s.mu.RLock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.RUnlock()
	n := 0
	for _, c := range conns {
		p, err := c.Principal(c.ctx)
		if err != nil || (filter != nil && !filter(p)) {
			continue
		}
		if c.enqueue(frame) == nil {
			n++
		}
	}
	return n
}

func encodeNotification(method string, params any) ([]byte, error) {
	b, err := json.Marshal(notification{JSONRPC: jsonrpcVersion, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("controlapi: encode %s: %w", method, err)
	}
	return append(b, '\n'), nil
}
