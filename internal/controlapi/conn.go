package controlapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

const (
	methodHello = string(api.Hello)
	// NotifyClosing is the last notification a dropped connection gets,
	// with params {"reason": ...}: slow_consumer, frame_too_large,
	// hello_timeout, auth_failures, shutdown. A pre-auth connection closed
	// to make room (reason preauth_evicted) gets nothing.
	NotifyClosing = string(api.NotifyClosing)
	// maxHelloFailures closes a connection that keeps presenting bad tokens.
	maxHelloFailures = 5
	// closeGrace bounds the final flush of a closing connection.
	closeGrace = 250 * time.Millisecond
)

// conn is one client connection: a reader loop that dispatches calls
// (bounded concurrency), and a writer loop that owns every write, fed by a
// bounded queue so no producer ever waits on the client.
type conn struct {
	s      *Server
	nc     net.Conn
	id     uint64
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte
	sem    chan struct{}
	wg     sync.WaitGroup
	host   string // remote host, "" on the unix socket

	// Guarded by Server.mu; see budget.
	budget           *budget
	counted, preAuth bool

	mu           sync.Mutex
	token        string
	reason       string
	helloFails   int
	eventsCancel context.CancelFunc // the live events subscription, if any
}

func newConn(parent context.Context, s *Server, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(parent)
	return &conn{
		s: s, nc: nc, id: id, parent: parent, ctx: ctx, cancel: cancel, host: hostOf(nc),
		out: make(chan []byte, s.opts.OutboundQueue), sem: make(chan struct{}, s.opts.MaxInFlight),
	}
}

func (c *conn) serve() {
	c.wg.Add(1)
	go c.writeLoop()
	c.readLoop()
	c.close("")
	c.wg.Wait()
	c.s.unregister(c)
	if c.s.opts.OnClose != nil {
		c.mu.Lock()
		reason := c.reason
		c.mu.Unlock()
		if reason == "" && c.parent.Err() != nil {
			reason = "shutdown"
		}
		c.s.opts.OnClose(reason)
	}
}

func (c *conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var scratch []byte
	// One deadline covers the TLS handshake (done by the first read) and
	// auth.hello, so a stranger who stalls either is gone in HelloTimeout.
	_ = c.nc.SetDeadline(time.Now().Add(c.s.opts.HelloTimeout))
	for {
		frame, err := readFrame(r, c.s.opts.MaxFrame, &scratch)
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, errFrameTooLarge):
				c.s.log.Warn("controlapi: oversized frame; closing connection", "conn", c.id, "max", c.s.opts.MaxFrame)
				c.reply(nil, nil, Errorf(CodeInvalidRequest, "frame larger than %d bytes; closing connection", c.s.opts.MaxFrame))
				c.close("frame_too_large")
			case errors.As(err, &ne) && ne.Timeout() && c.ctx.Err() == nil:
				// The reason first: the reply's write can fail (a TLS
				// handshake that never finished) before close runs.
				c.markReason("hello_timeout")
				c.reply(nil, nil, Errorf(CodeUnauthorized, "no auth.hello within %s", c.s.opts.HelloTimeout))
				c.close("hello_timeout")
			}
			return
		}
		frame = bytes.TrimSpace(frame)
		if len(frame) == 0 {
			continue
		}
		req, perr := parseRequest(frame)
		if perr != nil {
			c.reply(req.ID, nil, perr)
			continue
		}
		if req.Method == methodHello {
			// Synchronous, so a call pipelined right after it sees the token.
			if !c.hello(req) {
				return
			}
			continue
		}
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() { <-c.sem }()
			c.dispatch(req)
		}()
	}
}

type helloParams struct {
	Token string `json:"token"`
}

// HelloResult is auth.hello's result.
type HelloResult struct {
	Principal auth.Principal `json:"principal"`
	Protocol  int            `json:"protocol"`
}

func (c *conn) hello(req request) bool {
	var p helloParams
	if err := DecodeStrictLimits(req.Params, &p, Limits{MaxString: 256, MaxList: 0, MaxDepth: 1}); err != nil {
		c.replyErr(req.ID, err)
		return true
	}
	principal, err := c.s.opts.Auth.Verify(c.ctx, p.Token)
	c.mu.Lock()
	if err != nil {
		c.token = "" // fail closed: a bad hello also drops the previous identity
		c.helloFails++
		fails := c.helloFails
		c.mu.Unlock()
		c.s.log.Warn("controlapi: auth.hello refused", "conn", c.id, "err", err)
		c.replyErr(req.ID, err)
		if fails >= maxHelloFailures {
			c.close("auth_failures")
			return false
		}
		return true
	}
	c.token = p.Token
	c.mu.Unlock()
	c.s.authenticated(c)
	_ = c.nc.SetReadDeadline(time.Time{})
	c.reply(req.ID, HelloResult{Principal: principal, Protocol: 1}, nil)
	return true
}

func (c *conn) dispatch(req request) {
	p, err := c.Principal(c.ctx)
	if err != nil {
		c.replyErr(req.ID, err)
		return
	}
	h, ok := c.s.lookup(req.Method)
	if !ok {
		c.reply(req.ID, nil, Errorf(CodeMethodNotFound, "method not found: %s", req.Method))
		return
	}
	if !h.access.Allows(p) {
		c.reply(req.ID, nil, Forbidden("%s needs %s access; %s %q does not have it", req.Method, h.access, roleLabel(p), p.Name))
		return
	}
	res, err := h.fn(c.ctx, &Call{Method: req.Method, Principal: p, Params: req.Params, conn: c})
	if err != nil {
		re, known := toRPCError(err)
		if !known {
			c.s.log.Error("controlapi: handler failed", "method", req.Method, "principal", p.Name, "err", err)
		}
		c.reply(req.ID, nil, re)
		return
	}
	c.reply(req.ID, res, nil)
}

func roleLabel(p auth.Principal) string {
	if p.Role == auth.RoleDevice {
		if p.ReadOnly {
			return "read-only device"
		}
		return "control device"
	}
	return string(p.Role)
}

func (c *conn) replyErr(id json.RawMessage, err error) {
	re, known := toRPCError(err)
	if !known {
		c.s.log.Error("controlapi: call failed", "conn", c.id, "err", err)
	}
	c.reply(id, nil, re)
}

// reply queues a response. Calls without an id are JSON-RPC notifications
// and get no response, except errors found before the id could be read.
func (c *conn) reply(id json.RawMessage, result any, rerr *RPCError) {
	if id == nil && rerr == nil {
		return
	}
	resp := response{JSONRPC: jsonrpcVersion, ID: id, Error: rerr}
	if rerr == nil {
		b, err := json.Marshal(result)
		if err != nil {
			c.s.log.Error("controlapi: encode result", "conn", c.id, "err", err)
			resp.Error = Errorf(CodeInternal, "internal error")
		} else {
			resp.Result = b
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		c.s.log.Error("controlapi: encode response", "conn", c.id, "err", err)
		return
	}
	_ = c.enqueue(append(b, '\n'))
}

// Notify queues a notification; it never blocks (see Call.Notify).
func (c *conn) Notify(method string, params any) error {
	frame, err := encodeNotification(method, params)
	if err != nil {
		return err
	}
	return c.enqueue(frame)
}

// Principal re-verifies the connection's token now.
func (c *conn) Principal(ctx context.Context) (auth.Principal, error) {
	c.mu.Lock()
	tok := c.token
	c.mu.Unlock()
	if tok == "" {
		return auth.Principal{}, Errorf(CodeUnauthorized, "unauthenticated: call auth.hello first")
	}
	return c.s.opts.Auth.Verify(ctx, tok)
}

// Done is closed when the connection ends.
func (c *conn) Done() <-chan struct{} { return c.ctx.Done() }

func (c *conn) enqueue(frame []byte) error {
	if c.ctx.Err() != nil {
		return ErrConnClosed
	}
	select {
	case c.out <- frame:
		return nil
	default:
		c.s.log.Warn("controlapi: dropping slow client", "conn", c.id, "queue", cap(c.out))
		c.close("slow_consumer")
		return ErrConnClosed
	}
}

func (c *conn) close(reason string) {
	c.markReason(reason)
	c.cancel()
}

// markReason records why the connection ends; the first reason wins.
func (c *conn) markReason(reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.mu.Unlock()
}

// evict closes a pre-auth connection to make room for a newer one. It runs
// under Server.mu, so it closes the socket itself rather than a TLS
// connection (whose Close may write an alert).
func (c *conn) evict() {
	c.s.log.Debug("controlapi: pre-auth connection evicted", "conn", c.id, "host", c.host)
	c.close("preauth_evicted")
	if tc, ok := c.nc.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	c.nc.Close()
}

func (c *conn) writeLoop() {
	defer c.wg.Done()
	defer c.nc.Close()
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		select {
		case f := <-c.out:
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
			bw.Write(f)
			for len(c.out) > 0 && bw.Buffered() < 64<<10 {
				bw.Write(<-c.out)
			}
			if err := bw.Flush(); err != nil {
				c.s.log.Warn("controlapi: write failed; dropping client", "conn", c.id, "err", err)
				c.close("write_failed")
				return
			}
		case <-c.ctx.Done():
			c.finalFlush(bw)
			return
		}
	}
}

// finalFlush sends what is queued and a closing notice, best effort, within
// closeGrace: a client that stopped reading does not delay the close.
func (c *conn) finalFlush(bw *bufio.Writer) {
	c.mu.Lock()
	reason := c.reason
	c.mu.Unlock()
	if reason == "" && c.parent.Err() != nil {
		reason = "shutdown"
	}
	if reason == "write_failed" || reason == "preauth_evicted" {
		return
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(min(closeGrace, c.s.opts.WriteTimeout)))
	for len(c.out) > 0 {
		if _, err := bw.Write(<-c.out); err != nil {
			return
		}
	}
	if reason != "" {
		if f, err := encodeNotification(NotifyClosing, map[string]string{"reason": reason}); err == nil {
			bw.Write(f)
		}
	}
	if err := bw.Flush(); err != nil {
		c.s.log.Debug("controlapi: final flush", "conn", c.id, "err", err)
	}
}

func (c *conn) String() string { return fmt.Sprintf("conn#%d", c.id) }
