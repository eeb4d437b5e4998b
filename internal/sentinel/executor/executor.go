// Package executor carries out the Sentinel's decisions: dispatch, inject,
// defer and spawn, plus the task-discovery menu (pending decisions, router, consumer).
package executor

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// Gate is the NudgePolicy as the executors use it: Check before delivery,
// RecordFired only after a successful one.
type Gate interface {
	Check(ctx context.Context, req policy.Request) policy.Verdict
	RecordFired(ctx context.Context, req policy.Request) (string, error)
}

// PostFunc posts a non-turn message (the DeliveryHub's Post).
type PostFunc func(ctx context.Context, m spine.Message) error

// Nudge is a message the Sentinel wants the owner to see.
type Nudge struct {
	// Action is the policy action line: policy.ActionNudge, ActionInject,
	// ActionDefer (charged to the nudge quota).
	Action   string          `json:"action"`
	Message  string          `json:"message"`
	Session  string          `json:"session,omitempty"` // "channel:chat_id"
	Priority policy.Priority `json:"priority,omitempty"`
	Topic    string          `json:"topic,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	// Answer marks the owner's answer to a menu (a pick), which the
	// policy does not pace like a new nudge (policy.Request.Answer).
	Answer bool `json:"answer,omitempty"`
}

func (n Nudge) request() policy.Request {
	action := n.Action
	if action == "" {
		action = policy.ActionNudge
	}
	return policy.Request{Action: action, SessionKey: n.Session, Content: n.Message, Priority: n.Priority, Topic: n.Topic, Answer: n.Answer}
}

// Delivery is reported after a nudge reached the owner, so the feedback
// tracker can record it as dispatched under its nudge ID.
type Delivery struct {
	NudgeID  string          `json:"nudge_id"`
	Action   string          `json:"action"`
	Session  string          `json:"session"`
	Content  string          `json:"content"`
	Topic    string          `json:"topic,omitempty"`
	Priority policy.Priority `json:"priority,omitempty"`
	At       time.Time       `json:"at"`
}

// DeliveredFunc observes successful deliveries (feedback tracker, events).
type DeliveredFunc func(ctx context.Context, d Delivery)

// Result is the outcome of one executor call. Executors never return
// errors for expected failures: the result says what happened.
type Result struct {
	// Verdict is the policy's answer (Allow false with the denying layer).
	Verdict policy.Verdict `json:"verdict"`
	// Delivered: the message reached at least one outlet (or the spawn started).
	Delivered bool `json:"delivered"`
	// Queued: accepted for later delivery (inject, defer).
	Queued  bool     `json:"queued,omitempty"`
	NudgeID string   `json:"nudge_id,omitempty"`
	Targets []string `json:"targets,omitempty"` // "channel:chat_id" reached
	Error   string   `json:"error,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Target is one place a proactive message can go.
type Target struct {
	Channel string `json:"channel"`
	ChatID  string `json:"chat_id"`
}

// Key is "channel:chat_id".
func (t Target) Key() string { return spine.ConversationKey(t.Channel, t.ChatID) }

// TargetsFunc resolves where a nudge for session goes. An empty session
// asks for the default targets (for example the most recent session).
type TargetsFunc func(session string) []Target

// LayerInput marks a Result refused before the policy was asked: the input
// was unusable (no message, no target, no executor configured).
const LayerInput = "input"

func denied(layer, reason string) Result {
	return Result{Verdict: policy.Verdict{Layer: layer, Reason: reason}}
}
