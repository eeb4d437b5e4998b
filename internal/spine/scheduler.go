package spine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Handler runs one turn. It must call t.Drain at the top of every tool-loop
// iteration to merge injected user input, and return promptly when ctx ends.
type Handler func(ctx context.Context, t *Turn) (reply string, err error)

// Result is the outcome of a submitted request.
type Result struct {
	Reply string
	Err   error
	// Delivered reports that the reply reached an outlet.
	Delivered bool
	// Injected reports that the request was drained into a running turn
	// rather than run as a turn of its own.
	Injected bool
}

// Ticket tracks a submitted request.
type Ticket struct {
	done chan struct{}
	res  Result
}

func newTicket() *Ticket { return &Ticket{done: make(chan struct{})} }

func (t *Ticket) finish(r Result) {
	t.res = r
	close(t.done)
}

// Done is closed when the request has been handled.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Wait blocks until the request has been handled or ctx ends.
func (t *Ticket) Wait(ctx context.Context) (Result, error) {
	select {
	case <-t.done:
		return t.res, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Turn is a running turn as its handler sees it.
type Turn struct {
	Request TurnRequest
	s       *Scheduler
	l       *lane
}

// Drain returns the requests injected into this turn since the last call,
// oldest first. Their tickets complete as injected.
func (t *Turn) Drain() []TurnRequest {
	if t.l == nil {
		return nil
	}
	t.s.mu.Lock()
	items := t.l.mailbox
	t.l.mailbox = nil
	t.s.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	out := make([]TurnRequest, len(items))
	for i, it := range items {
		out[i] = it.req
		it.ticket.finish(Result{Injected: true})
	}
	return out
}

type item struct {
	req    TurnRequest
	ticket *Ticket
}

// lane is the serial queue of one conversation. It exists only while it has
// work, so idle conversations cost nothing.
type lane struct {
	key string
	// active is set while a goroutine serves the lane; exactly one may.
	active  bool
	queue   []*item
	running *item
	cancel  context.CancelCauseFunc
	mailbox []*item
}

// Options configures a Scheduler.
type Options struct {
	// Pools bounds concurrent turns per origin; absent or 0 means unbounded.
	// OriginAnswer shares OriginUser's pool.
	Pools  map[Origin]int
	Logger *slog.Logger
	// OnTurnStart and OnTurnDone observe turns (event log, wake parking). They
	// run on the lane goroutine and must not block.
	OnTurnStart func(req TurnRequest)
	OnTurnDone  func(req TurnRequest, res Result)
}

// Scheduler routes requests to one serial lane per conversation and bounds
// concurrency per origin.
type Scheduler struct {
	handler Handler
	hub     *Hub
	log     *slog.Logger
	pools   map[Origin]chan struct{}
	onStart func(TurnRequest)
	onDone  func(TurnRequest, Result)

	baseCtx    context.Context
	baseCancel context.CancelFunc
	wg         sync.WaitGroup

	mu          sync.Mutex
	lanes       map[string]*lane
	closed      bool
	userRunning int
}

// DefaultUserPool is how many user turns run at once (gateway.user_pool).
const DefaultUserPool = 4

// DefaultPools is the gateway's pool configuration.
func DefaultPools() map[Origin]int {
	return map[Origin]int{OriginUser: DefaultUserPool, OriginSentinel: 1, OriginCron: 2, OriginHeartbeat: 1, OriginSubagent: 2}
}

// NewScheduler returns a scheduler running turns with h and delivering
// replies through hub (nil hub: replies are only returned on tickets).
func NewScheduler(h Handler, hub *Hub, opts Options) *Scheduler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{
		handler: h, hub: hub, log: log,
		pools:   make(map[Origin]chan struct{}),
		onStart: opts.OnTurnStart, onDone: opts.OnTurnDone,
		baseCtx: ctx, baseCancel: cancel,
		lanes: make(map[string]*lane),
	}
	for o, n := range opts.Pools {
		if n > 0 {
			s.pools[o] = make(chan struct{}, n)
		}
	}
	if p, ok := s.pools[OriginUser]; ok {
		s.pools[OriginAnswer] = p
	}
	return s
}

// Submit queues req on its conversation's lane according to its BusyPolicy.
// Proactive origins asking for INJECT or INTERRUPT are demoted to APPEND:
// only a person may cut into a running turn.
func (s *Scheduler) Submit(req TurnRequest) (*Ticket, error) {
	if !req.Origin.Valid() {
		return nil, fmt.Errorf("spine: submit: unknown origin %q", req.Origin)
	}
	key := req.Conversation()
	if key == ":" {
		return nil, errors.New("spine: submit: request has no conversation")
	}
	if req.Origin.Proactive() && req.Busy != Append {
		s.log.Debug("busy policy demoted to append", "origin", req.Origin, "requested", req.Busy.String(), "conversation", key)
		req.Busy = Append
	}
	it := &item{req: req, ticket: newTicket()}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	l := s.lanes[key]
	if l == nil {
		l = &lane{key: key}
		s.lanes[key] = l
	}
	if l.running != nil {
		switch req.Busy {
		case Inject:
			l.mailbox = append(l.mailbox, it)
			return it.ticket, nil
		case Interrupt:
			l.queue = append([]*item{it}, l.queue...)
			l.cancel(ErrInterrupted)
			return it.ticket, nil
		}
	}
	l.queue = append(l.queue, it)
	if !l.active {
		l.active = true
		s.wg.Add(1)
		go s.runLane(l)
	}
	return it.ticket, nil
}

// ErrCancelled is the cancellation cause of a turn stopped by Cancel (the
// owner pressed Ctrl-C).
var ErrCancelled = errors.New("spine: turn cancelled")

// Cancel stops conversation's running turn, if any. Queued turns still run.
func (s *Scheduler) Cancel(conversation string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[conversation]
	if l == nil || l.running == nil {
		return false
	}
	l.cancel(ErrCancelled)
	return true
}

// HasInflight reports whether conversation has a turn running or queued.
func (s *Scheduler) HasInflight(conversation string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[conversation]
	return l != nil && (l.running != nil || len(l.queue) > 0)
}

// PoolInUse reports how many of origin's pool slots are taken and the
// pool's size (0: unbounded).
func (s *Scheduler) PoolInUse(o Origin) (inUse, size int) {
	p := s.pools[o]
	return len(p), cap(p)
}

// UserBusy reports whether any user-initiated turn is running; the wake
// scheduler parks heartbeat wakes while it is.
func (s *Scheduler) UserBusy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userRunning > 0
}

// Shutdown stops accepting requests and waits for running and queued turns.
// When ctx ends first, the remaining turns are cancelled and Shutdown waits
// for their handlers to return before reporting ctx's error.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.baseCancel()
		return nil
	case <-ctx.Done():
		s.baseCancel()
		<-done
		return fmt.Errorf("spine: shutdown: cancelled running turns: %w", ctx.Err())
	}
}

func (s *Scheduler) runLane(l *lane) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(l.queue) == 0 {
			l.active = false
			delete(s.lanes, l.key)
			s.mu.Unlock()
			return
		}
		it := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		ctx, cancel := context.WithCancelCause(s.baseCtx)
		l.running, l.cancel = it, cancel
		user := !it.req.Origin.Proactive()
		if user {
			s.userRunning++
		}
		s.mu.Unlock()

		res := s.runTurn(ctx, l, it)

		s.mu.Lock()
		if user {
			s.userRunning--
		}
		// An inject the turn never drained must not be lost: it runs next.
		if len(l.mailbox) > 0 {
			for _, m := range l.mailbox {
				m.req.Busy = Append
			}
			l.queue = append(l.mailbox, l.queue...)
			l.mailbox = nil
		}
		l.running, l.cancel = nil, nil
		s.mu.Unlock()
		cancel(nil)
		// Observers run before the ticket completes, so whoever waits on it
		// sees their effects (an inject settled, an event recorded).
		if s.onDone != nil {
			s.onDone(it.req, res)
		}
		it.ticket.finish(res)
	}
}

func (s *Scheduler) runTurn(ctx context.Context, l *lane, it *item) Result {
	if pool := s.pools[it.req.Origin]; pool != nil {
		select {
		case pool <- struct{}{}:
			defer func() { <-pool }()
		case <-ctx.Done():
			return Result{Err: fmt.Errorf("spine: waiting for %s pool: %w", it.req.Origin, context.Cause(ctx))}
		}
	}
	if s.onStart != nil {
		s.onStart(it.req)
	}
	reply, err := s.handler(ctx, &Turn{Request: it.req, s: s, l: l})
	res := Result{Reply: reply, Err: err}
	if err != nil {
		lvl := slog.LevelWarn
		if c := context.Cause(ctx); errors.Is(c, ErrCancelled) || errors.Is(c, ErrInterrupted) {
			lvl = slog.LevelInfo // the owner asked for it
		}
		s.log.Log(context.WithoutCancel(ctx), lvl, "turn ended early", "conversation", l.key, "origin", it.req.Origin, "err", err)
		return res
	}
	if reply != "" && s.hub != nil {
		m := Message{Channel: it.req.Channel, ChatID: it.req.ChatID, Content: reply, Origin: it.req.Origin,
			Proactive: it.req.Origin.Proactive(), Extras: it.req.Extras}
		delivered, derr := s.hub.reply(context.WithoutCancel(ctx), m)
		res.Delivered = delivered
		if derr != nil {
			s.log.Warn("reply not delivered", "conversation", l.key, "err", derr)
		}
	}
	return res
}
