package executor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// SpawnFunc starts a micro-agent for task whose result the subagent manager
// delivers back to channel/chatID itself. Deprecated: its result bypasses
// the dispatcher (not in the owner's session, not tracked for feedback);
// use SpawnRunner.
type SpawnFunc func(ctx context.Context, task, channel, chatID string) error

// SpawnRunner starts a micro-agent on task and returns once it started. The
// runtime calls done exactly once, when the micro-agent finished, with its
// result or its failure — and never when SpawnRunner returned an error. The
// Sentinel delivers the result through the nudge dispatcher.
type SpawnRunner func(ctx context.Context, task string, done SpawnDone) error

// SpawnDone receives a micro-agent's result.
type SpawnDone func(ctx context.Context, result string, err error)

// SpawnRequest is a spawn_agent decision.
type SpawnRequest struct {
	Task     string
	Session  string // "channel:chat_id" the result goes back to; empty = default target
	Priority policy.Priority
	Topic    string
	Reason   string
	// Answer: the owner picked this spawn from a menu (policy.Request.Answer).
	Answer bool
}

// SpawnOptions are ProactiveSpawn's dependencies.
type SpawnOptions struct {
	Gate Gate
	// Run starts micro-agents whose results Deliver posts.
	Run SpawnRunner
	// Deliver posts a result under the spawn's nudge ID (the dispatcher's
	// DeliverCharged: targets, post, feedback, the owner's session).
	Deliver func(ctx context.Context, n Nudge, nudgeID string) Result
	// Spawn is the deprecated path, used only without Run.
	Spawn SpawnFunc
	// Targets resolves an empty session to a default one.
	Targets TargetsFunc
	// OnDelivered sees a spawn started through the deprecated Spawn; with
	// Run, Deliver reports the result instead.
	OnDelivered DeliveredFunc
	Logger      *slog.Logger
}

// ProactiveSpawn runs spawn_agent decisions. It does its own policy check on
// the spawn quota line (so spawns do not eat the nudge quota) while sharing
// the content dedup, keyed on the task.
type ProactiveSpawn struct {
	o SpawnOptions
}

// NewSpawn returns a ProactiveSpawn.
func NewSpawn(opts SpawnOptions) *ProactiveSpawn {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &ProactiveSpawn{o: opts}
}

// Dispatch validates, checks the policy, and spawns.
func (s *ProactiveSpawn) Dispatch(ctx context.Context, r SpawnRequest) Result {
	task := strings.TrimSpace(r.Task)
	if task == "" {
		return denied(LayerInput, "spawn_agent needs a task")
	}
	if s.o.Spawn == nil && (s.o.Run == nil || s.o.Deliver == nil) {
		return denied(LayerInput, "no subagent manager configured")
	}
	session := r.Session
	if session == "" && s.o.Targets != nil {
		if t := s.o.Targets(""); len(t) > 0 {
			session = t[0].Key()
		}
	}
	ch, chatID, ok := splitSession(session)
	if !ok {
		return denied(LayerInput, fmt.Sprintf("spawn_agent: no usable target session %q", session))
	}
	req := policy.Request{Action: policy.ActionSpawn, SessionKey: session, Content: task, Priority: r.Priority, Topic: r.Topic, Answer: r.Answer}
	v := policy.Verdict{Allow: true}
	if s.o.Gate != nil {
		if v = s.o.Gate.Check(ctx, req); !v.Allow {
			return Result{Verdict: v}
		}
	}
	if s.o.Run != nil && s.o.Deliver != nil {
		return s.run(ctx, r, req, v, task, session)
	}
	if err := s.o.Spawn(ctx, task, ch, chatID); err != nil {
		s.o.Logger.Warn("sentinel: spawn failed; quota not charged", "task", task, "err", err)
		return Result{Verdict: v, Error: fmt.Sprintf("spawn: %v", err)}
	}
	res := Result{Verdict: v, Delivered: true, Targets: []string{session}, Note: "micro-agent spawned; result goes to " + session}
	res.NudgeID = s.record(ctx, req)
	if s.o.OnDelivered != nil {
		s.o.OnDelivered(ctx, Delivery{NudgeID: res.NudgeID, Action: req.Action, Session: session, Content: task, Topic: r.Topic, Priority: r.Priority})
	}
	return res
}

// run starts the micro-agent and charges the spawn; its result is
// delivered under the spawn's nudge ID when it arrives.
func (s *ProactiveSpawn) run(ctx context.Context, r SpawnRequest, req policy.Request, v policy.Verdict, task, session string) Result {
	// done may run before Run returns (a fast micro-agent, or a runtime
	// that calls it synchronously): the result then waits for the charge
	// that names its nudge, and is delivered here.
	type early struct {
		ctx    context.Context
		result string
		err    error
	}
	var (
		mu       sync.Mutex
		nudgeID  string
		recorded bool
		parked   *early
	)
	done := func(ctx context.Context, result string, err error) {
		mu.Lock()
		if !recorded {
			parked = &early{ctx, result, err}
			mu.Unlock()
			return
		}
		id := nudgeID
		mu.Unlock()
		s.deliver(ctx, r, task, session, id, result, err)
	}
	if err := s.o.Run(ctx, task, done); err != nil {
		s.o.Logger.Warn("sentinel: spawn failed; quota not charged", "task", task, "err", err)
		return Result{Verdict: v, Error: fmt.Sprintf("spawn: %v", err)}
	}
	id := s.record(ctx, req)
	mu.Lock()
	nudgeID, recorded = id, true
	p := parked
	mu.Unlock()
	if p != nil {
		s.deliver(p.ctx, r, task, session, id, p.result, p.err)
	}
	return Result{Verdict: v, Delivered: true, NudgeID: id, Targets: []string{session}, Note: "micro-agent started; its result goes to " + session}
}

func (s *ProactiveSpawn) deliver(ctx context.Context, r SpawnRequest, task, session, nudgeID, result string, err error) {
	msg := strings.TrimSpace(result)
	switch {
	case err != nil:
		msg = fmt.Sprintf("I couldn't finish %q: %v", task, err)
	case msg == "":
		msg = fmt.Sprintf("I finished %q; there was nothing to report.", task)
	}
	n := Nudge{Action: policy.ActionSpawn, Message: msg, Session: session, Priority: r.Priority, Topic: r.Topic, Reason: "spawn result: " + task}
	res := s.o.Deliver(context.WithoutCancel(ctx), n, nudgeID)
	if !res.Delivered {
		s.o.Logger.Error("sentinel: spawn result not delivered", "task", task, "session", session, "nudge_id", nudgeID, "layer", res.Verdict.Layer, "reason", res.Verdict.Reason, "err", res.Error)
	}
}

func (s *ProactiveSpawn) record(ctx context.Context, req policy.Request) string {
	if s.o.Gate == nil {
		return ""
	}
	id, err := s.o.Gate.RecordFired(ctx, req)
	if err != nil {
		s.o.Logger.Error("sentinel: spawn started but fire not recorded", "err", err)
	}
	return id
}

func splitSession(key string) (string, string, bool) {
	ch, id, ok := strings.Cut(key, ":")
	return ch, id, ok && ch != "" && id != ""
}
