package controlapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// clientMaxFrame caps frames the client reads; server responses are
// budgeted well below it.
const clientMaxFrame = 8 << 20

// notificationBuffer is how many notifications the client holds for a slow
// reader before it starts dropping them (counted by Dropped).
const notificationBuffer = 1024

// Client is a control API connection. It is safe for concurrent use.
type Client struct {
	nc        net.Conn
	wmu       sync.Mutex
	bw        *bufio.Writer
	nextID    atomic.Int64
	notes     chan Notification
	dropped   atomic.Uint64
	done      chan struct{}
	principal auth.Principal

	mu      sync.Mutex
	pending map[int64]chan response
	err     error
	// connErr is the last error the server sent that no call owned.
	connErr *RPCError
}

// ErrClientClosed is returned by calls on a closed client.
var ErrClientClosed = errors.New("controlapi: client closed")

// Dial connects to the gateway's unix socket and authenticates with token.
func Dial(ctx context.Context, socketPath, token string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("controlapi: dial %s: %w", socketPath, err)
	}
	return NewClient(ctx, nc, token)
}

// DialTLS connects to a gateway's TLS listener and authenticates with token.
func DialTLS(ctx context.Context, addr, token string, cfg *tls.Config) (*Client, error) {
	d := tls.Dialer{Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controlapi: dial %s: %w", addr, err)
	}
	return NewClient(ctx, nc, token)
}

// NewClient runs the protocol over an established connection and says
// auth.hello. It takes ownership of nc.
func NewClient(ctx context.Context, nc net.Conn, token string) (*Client, error) {
	c := &Client{
		nc: nc, bw: bufio.NewWriterSize(nc, 16<<10), notes: make(chan Notification, notificationBuffer),
		done: make(chan struct{}), pending: map[int64]chan response{},
	}
	go c.readLoop()
	hello, err := Invoke(ctx, c, api.Hello, api.HelloParams{Token: token})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.principal = hello.Principal
	return c, nil
}

// Principal is who the gateway authenticated at dial time.
func (c *Client) Principal() auth.Principal { return c.principal }

// Notifications delivers server notifications. The channel is closed when
// the connection ends. A reader that falls notificationBuffer behind loses
// notifications (see Dropped) rather than stalling responses.
func (c *Client) Notifications() <-chan Notification { return c.notes }

// Dropped counts notifications lost to a slow Notifications reader.
func (c *Client) Dropped() uint64 { return c.dropped.Load() }

// Done is closed when the connection ends; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended (nil while open).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection.
func (c *Client) Close() error {
	err := c.nc.Close()
	<-c.done
	return err
}

// Call invokes method with params (any JSON-encodable value, nil for none)
// and decodes the result into result (nil to discard). A server error comes
// back as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	req := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{jsonrpcVersion, id, method, params}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("controlapi: encode %s: %w", method, err)
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.write(ctx, append(b, '\n')); err != nil {
		// A server that refused us (too many connections) writes its
		// reason and closes before reading; prefer that reason to EPIPE.
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		select {
		case resp := <-ch:
			if resp.Error != nil {
				return resp.Error
			}
		case <-c.done:
			select {
			case resp := <-ch:
				if resp.Error != nil {
					return resp.Error
				}
			default:
			}
			var re *RPCError
			if cerr := c.Err(); errors.As(cerr, &re) {
				return re
			}
		case <-t.C:
		}
		return err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return resp.Error
		}
		if result != nil && len(resp.Result) > 0 {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				return fmt.Errorf("controlapi: decode %s result: %w", method, err)
			}
		}
		return nil
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) write(ctx context.Context, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetWriteDeadline(dl)
	} else {
		_ = c.nc.SetWriteDeadline(time.Time{})
	}
	if _, err := c.bw.Write(frame); err != nil {
		return fmt.Errorf("controlapi: write: %w", err)
	}
	if err := c.bw.Flush(); err != nil {
		return fmt.Errorf("controlapi: write: %w", err)
	}
	return nil
}

type inbound struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *RPCError       `json:"error"`
}

func (c *Client) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var scratch []byte
	var err error
	for {
		var frame []byte
		frame, err = readFrame(r, clientMaxFrame, &scratch)
		if err != nil {
			break
		}
		var m inbound
		if json.Unmarshal(frame, &m) != nil {
			continue
		}
		if m.Method != "" && len(m.ID) == 0 {
			select {
			case c.notes <- Notification{Method: m.Method, Params: m.Params}:
			default:
				c.dropped.Add(1)
			}
			continue
		}
		id, perr := strconv.ParseInt(string(m.ID), 10, 64)
		if perr != nil {
			// An error the server could not attribute to a call (e.g. the
			// frame-too-large refusal): fail every pending call with it.
			if m.Error != nil {
				c.failPending(m.Error)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[id]
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- response{ID: m.ID, Result: m.Result, Error: m.Error}:
			default: // a duplicate id from a confused server; the first answer stands
			}
		}
	}
	c.mu.Lock()
	if c.err == nil {
		if c.connErr != nil {
			c.err = c.connErr
		} else {
			c.err = fmt.Errorf("%w: %v", ErrClientClosed, err)
		}
	}
	c.mu.Unlock()
	c.nc.Close()
	close(c.notes)
	close(c.done)
}

func (c *Client) failPending(e *RPCError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Remember it: if the server closes right after (a refusal), calls made
	// after the close report this reason rather than a bare EOF.
	c.connErr = e
	for id, ch := range c.pending {
		select {
		case ch <- response{Error: e}:
		default:
		}
		delete(c.pending, id)
	}
}

// RetryOptions configures DialRetry.
type RetryOptions struct {
	Clock clock.Clock // default clock.Real()
	// Min and Max bound the exponential backoff (defaults 100ms and 5s).
	Min, Max time.Duration
	// OnError, if set, sees each failed attempt (for logs or a status line).
	OnError func(attempt int, err error)
}

// DialRetry calls dial until it succeeds or ctx ends, backing off
// exponentially between attempts. An authentication failure is final: it
// is returned at once, since retrying a bad token cannot help. Clients that
// must survive a gateway restart loop: c := DialRetry(...); use c until
// <-c.Done(); repeat.
func DialRetry(ctx context.Context, dial func(context.Context) (*Client, error), opts RetryOptions) (*Client, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Min <= 0 {
		opts.Min = 100 * time.Millisecond
	}
	if opts.Max < opts.Min {
		opts.Max = max(5*time.Second, opts.Min)
	}
	wait := opts.Min
	for attempt := 1; ; attempt++ {
		c, err := dial(ctx)
		if err == nil {
			return c, nil
		}
		if IsCode(err, CodeUnauthorized) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("controlapi: gave up after %d attempts: %w (last: %v)", attempt, ctx.Err(), err)
		}
		if opts.OnError != nil {
			opts.OnError(attempt, err)
		}
		if serr := clock.Sleep(ctx, opts.Clock, wait); serr != nil {
			return nil, fmt.Errorf("controlapi: gave up after %d attempts: %w (last: %v)", attempt, serr, err)
		}
		wait = min(wait*2, opts.Max)
	}
}
