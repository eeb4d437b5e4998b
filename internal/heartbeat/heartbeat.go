// Package heartbeat runs the owner's HEARTBEAT.md task list on a timer: a
// cheap tool-call decision first, the full agent loop only when a task is due.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/wake"
)

// Conversation is the lane every heartbeat turn runs on, so heartbeat work
// keeps its own session and never queues behind the owner's chat.
const Conversation = "heartbeat:main"

// Defaults used when the matching Options field is zero.
const (
	DefaultInterval    = 30 * time.Minute
	DefaultTurnTimeout = 10 * time.Minute
)

// Waiter ends the heartbeat's sleep early; *wake.Scheduler implements it.
type Waiter interface {
	Wait(ctx context.Context, maxSleep time.Duration) (wake.Wake, error)
}

// Options configures a Service.
type Options struct {
	// Path is workspace/HEARTBEAT.md.
	Path         string
	Interval     time.Duration
	MaxFileBytes int
	// Provider answers phase one; nil means no model (active files are
	// skipped with route no_model).
	Provider llm.Provider
	Model    string
	// Submit runs phase two through the agent loop (the spine's
	// Scheduler.Submit).
	Submit func(spine.TurnRequest) (*spine.Ticket, error)
	// Post delivers a reply to each target when there are several (the
	// hub's Post).
	Post func(context.Context, spine.Message) error
	// Channel, ChatID and Forward are resolved into targets at fire time
	// (ResolveTargets); LastChatID finds a channel's most recent chat.
	Channel    string
	ChatID     string
	Forward    []string
	LastChatID func(channel string) string
	// Resolve, when set, replaces ResolveTargets: the runtime's one target
	// resolver (an attached surface, forward channels, the most recent real
	// channel, else the outbox), asked at fire time.
	Resolve func(channel, chatID string) []Target
	// Waiter is the wake scheduler; nil sleeps the plain interval.
	Waiter Waiter
	// LastRunPath records each outcome for status displays; "" disables.
	LastRunPath string
	// TurnTimeout bounds each phase.
	TurnTimeout time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
	// OnTick, when set, observes every tick's outcome (usage accounting
	// marks a tick that delivered nothing as silent).
	OnTick func(Outcome)
	// Quiet reports the owner's quiet hours (heartbeat.quiet_hours): a
	// scheduled tick then makes no model call. Nil: never quiet.
	Quiet func() bool
}

// Route names the path a tick took.
type Route string

const (
	RouteNoFile    Route = "no_file"       // HEARTBEAT.md absent: no model call
	RouteEmpty     Route = "template_only" // nothing but template: no model call
	RouteNoModel   Route = "no_model"      // tasks present but no model configured
	RouteQuiet     Route = "quiet_hours"   // the owner's quiet hours: no model call, tasks wait
	RouteSkip      Route = "skip"          // the model decided nothing is due
	RouteMalformed Route = "malformed"     // the model's decision was unusable: skipped
	RouteRun       Route = "run"           // phase two ran
	RouteError     Route = "error"
)

// Outcome is the result of one tick.
type Outcome struct {
	At          time.Time `json:"at"`
	Route       Route     `json:"route"`
	Action      Action    `json:"action"`
	Reason      string    `json:"reason,omitempty"`
	Tasks       string    `json:"tasks,omitempty"`
	ModelCalled bool      `json:"model_called"`
	WakeReasons []string  `json:"wake_reasons,omitempty"`
	Targets     []Target  `json:"targets,omitempty"`
	Delivered   []Target  `json:"delivered,omitempty"`
	Reply       string    `json:"reply,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// Service is the heartbeat.
type Service struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger
	// interval is opts.Interval as changed live by SetInterval; changed
	// ends the wait in progress so the new interval counts from the change.
	interval atomic.Int64
	changed  chan struct{}

	// tickMu keeps a manual tick from overlapping the loop's.
	tickMu sync.Mutex
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Path == "" {
		return nil, errors.New("heartbeat: no HEARTBEAT.md path")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.TurnTimeout <= 0 {
		opts.TurnTimeout = DefaultTurnTimeout
	}
	c := opts.Clock
	if c == nil {
		c = clock.Real()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, clk: c, log: log.With("component", "heartbeat"), changed: make(chan struct{}, 1)}
	s.interval.Store(int64(opts.Interval))
	return s, nil
}

// Run ticks every Interval, or earlier when the Waiter fires a wake, until
// ctx ends; it then returns nil. A failed tick is logged and the loop goes on.
func (s *Service) Run(ctx context.Context) error {
	for {
		reasons, changed, err := s.wait(ctx)
		if err != nil || ctx.Err() != nil {
			return nil
		}
		if changed {
			continue // SetInterval: wait the new interval from now
		}
		if _, err := s.tick(ctx, reasons); err != nil && ctx.Err() == nil {
			s.log.Warn("heartbeat tick failed", "err", err)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// wait waits one interval (or a wake); changed reports that SetInterval
// cut it short.
func (s *Service) wait(ctx context.Context) (reasons []string, changed bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cut := make(chan struct{})
	go func() {
		select {
		case <-s.changed:
			close(cut)
			cancel()
		case <-wctx.Done():
		}
	}()
	iv := s.Interval()
	if s.opts.Waiter != nil {
		var w wake.Wake
		w, err = s.opts.Waiter.Wait(wctx, iv)
		reasons = w.Reasons
	} else {
		err = clock.Sleep(wctx, s.clk, iv)
	}
	select {
	case <-cut:
		return nil, ctx.Err() == nil, ctx.Err()
	default:
	}
	return reasons, false, err
}

// Interval is the interval in effect.
func (s *Service) Interval() time.Duration { return time.Duration(s.interval.Load()) }

// SetInterval changes the interval of a running service (a live config
// reload): the wait in progress ends and the next heartbeat is d from now.
// A non-positive d is ignored.
func (s *Service) SetInterval(d time.Duration) {
	if d <= 0 || time.Duration(s.interval.Swap(int64(d))) == d {
		return
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// TickOnce runs one tick now.
func (s *Service) TickOnce(ctx context.Context) (Outcome, error) {
	return s.tick(ctx, nil)
}

func (s *Service) tick(ctx context.Context, wakeReasons []string) (out Outcome, err error) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	out = Outcome{At: s.clk.Now(), Action: ActionSkip, WakeReasons: wakeReasons}
	defer func() {
		if err != nil {
			out.Route, out.Action, out.Error = RouteError, ActionSkip, err.Error()
		}
		s.log.Info("heartbeat tick", "route", out.Route, "action", out.Action, "reason", out.Reason,
			"model_called", out.ModelCalled, "wake_reasons", wakeReasons, "delivered", len(out.Delivered))
		if s.opts.LastRunPath != "" {
			if werr := writeLastRun(s.opts.LastRunPath, out); werr != nil {
				s.log.Warn("heartbeat: last run not recorded", "err", werr)
			}
		}
		if s.opts.OnTick != nil {
			s.opts.OnTick(out)
		}
	}()

	st, content, err := ReadFile(s.opts.Path, s.opts.MaxFileBytes)
	switch {
	case err != nil:
		return out, err
	case !st.Present:
		out.Route, out.Reason = RouteNoFile, "HEARTBEAT.md not found"
		return out, nil
	case !st.Active:
		out.Route, out.Reason = RouteEmpty, "HEARTBEAT.md has no tasks"
		return out, nil
	case s.opts.Provider == nil:
		out.Route, out.Reason = RouteNoModel, "HEARTBEAT.md has tasks but no model is configured"
		return out, nil
	}
	if len(wakeReasons) == 0 && s.opts.Quiet != nil && s.opts.Quiet() {
		// Idle heartbeats are where agents burn tokens at night: a
		// scheduled tick in quiet hours asks nothing; a wake someone
		// asked for still runs.
		out.Route, out.Reason = RouteQuiet, "the owner's quiet hours: the tasks wait for the first tick after them"
		return out, nil
	}
	if st.Truncated {
		s.log.Warn("HEARTBEAT.md larger than the read cap; only its beginning is used", "bytes", st.Bytes, "cap", s.opts.MaxFileBytes)
	}

	// Phase one: the decision, through the virtual tool only.
	pctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	resp, err := s.opts.Provider.Chat(llm.WithCallTag(pctx, llm.CallTag{Origin: string(spine.OriginHeartbeat), Conversation: Conversation, Tick: true}), decisionRequest(s.opts.Model, string(content), out.At, wakeReasons))
	cancel()
	out.ModelCalled = true
	if err != nil {
		return out, fmt.Errorf("heartbeat: decision call to %s: %w", s.opts.Provider.Name(), err)
	}
	d, ok := parseDecision(resp)
	out.Reason = d.Reason
	if !ok {
		out.Route = RouteMalformed
		s.log.Warn("heartbeat decision unusable; skipping", "reason", d.Reason)
		return out, nil
	}
	if d.Action == ActionSkip {
		out.Route = RouteSkip
		return out, nil
	}

	// Phase two: the agent loop does the work and the reply is delivered.
	out.Route, out.Action, out.Tasks = RouteRun, ActionRun, d.Tasks
	return s.runTasks(ctx, out, d)
}

// runTasks submits the HEARTBEAT-origin turn and delivers its reply.
func (s *Service) runTasks(ctx context.Context, out Outcome, d Decision) (Outcome, error) {
	if s.opts.Submit == nil {
		return out, errors.New("heartbeat: no agent loop wired (Submit is nil)")
	}
	if s.opts.Resolve != nil {
		out.Targets = s.opts.Resolve(s.opts.Channel, s.opts.ChatID)
	} else {
		out.Targets = ResolveTargets(s.opts.Channel, s.opts.ChatID, s.opts.Forward, s.opts.LastChatID)
	}
	req := spine.TurnRequest{
		Origin:         spine.OriginHeartbeat,
		ConversationID: Conversation,
		Content:        turnContent(d.Tasks),
		Extras:         map[string]any{"heartbeat_reason": d.Reason},
	}
	// One target: the spine delivers the reply itself. Several or none: the
	// turn runs on the heartbeat's own ephemeral channel, whose reply the
	// hub drops, and the reply is posted to each target here.
	if len(out.Targets) == 1 {
		req.Channel, req.ChatID = out.Targets[0].Channel, out.Targets[0].ChatID
	} else {
		ch, id, _ := spine.SplitConversationKey(Conversation)
		req.Channel, req.ChatID = ch, id
	}
	if len(out.Targets) == 0 {
		s.log.Warn("heartbeat run has no delivery target; set heartbeat.channel or channels.forward")
	}
	ticket, err := s.opts.Submit(req)
	if err != nil {
		return out, fmt.Errorf("heartbeat: submit turn: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	res, err := ticket.Wait(wctx)
	if err != nil {
		return out, fmt.Errorf("heartbeat: waiting for the turn: %w", err)
	}
	if res.Err != nil {
		return out, fmt.Errorf("heartbeat: turn failed: %w", res.Err)
	}
	out.Reply = clip(res.Reply, 4<<10)
	if len(out.Targets) == 1 {
		if res.Delivered {
			out.Delivered = out.Targets
		}
		return out, nil
	}
	if res.Reply == "" || len(out.Targets) == 0 {
		return out, nil
	}
	if s.opts.Post == nil {
		return out, errors.New("heartbeat: no delivery hub wired (Post is nil)")
	}
	var errs []error
	for _, t := range out.Targets {
		m := spine.Message{Channel: t.Channel, ChatID: t.ChatID, Content: res.Reply, Origin: spine.OriginHeartbeat,
			Proactive: true, Extras: map[string]any{"heartbeat_reason": d.Reason}}
		if err := s.opts.Post(context.WithoutCancel(ctx), m); err != nil {
			errs = append(errs, err)
			continue
		}
		out.Delivered = append(out.Delivered, t)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("heartbeat: delivered to %d of %d targets: %w", len(out.Delivered), len(out.Targets), errors.Join(errs...))
	}
	return out, nil
}

func turnContent(tasks string) string {
	return "[Heartbeat] A task from HEARTBEAT.md is due now. Do it, then reply with a short message for the owner; " +
		"the reply is delivered to them as written.\n\nTasks:\n" + tasks
}
