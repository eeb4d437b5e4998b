package executor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// SpawnFunc starts a micro-agent for task whose result the subagent manager
// delivers back to channel/chatID.
type SpawnFunc func(ctx context.Context, task, channel, chatID string) error

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
	Gate  Gate
	Spawn SpawnFunc
	// Targets resolves an empty session to a default one.
	Targets     TargetsFunc
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
	if s.o.Spawn == nil {
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
	if err := s.o.Spawn(ctx, task, ch, chatID); err != nil {
		s.o.Logger.Warn("sentinel: spawn failed; quota not charged", "task", task, "err", err)
		return Result{Verdict: v, Error: fmt.Sprintf("spawn: %v", err)}
	}
	res := Result{Verdict: v, Delivered: true, Targets: []string{session}, Note: "micro-agent spawned; result goes to " + session}
	if s.o.Gate != nil {
		id, err := s.o.Gate.RecordFired(ctx, req)
		if err != nil {
			s.o.Logger.Error("sentinel: spawn started but fire not recorded", "err", err)
		}
		res.NudgeID = id
	}
	if s.o.OnDelivered != nil {
		s.o.OnDelivered(ctx, Delivery{NudgeID: res.NudgeID, Action: req.Action, Session: session, Content: task, Topic: r.Topic, Priority: r.Priority})
	}
	return res
}

func splitSession(key string) (string, string, bool) {
	ch, id, ok := strings.Cut(key, ":")
	return ch, id, ok && ch != "" && id != ""
}
