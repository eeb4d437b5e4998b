package questions

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/auth"
)

// ConversationParams names one conversation (show, reset, release).
type ConversationParams struct {
	Conversation string `json:"conversation"`
}

// OpenParams is conversations.open: bind the caller's operator session to
// Workspace (an absolute path to an existing directory).
type OpenParams struct {
	Conversation string `json:"conversation"`
	Workspace    string `json:"workspace"`
}

// NewParams is conversations.new. Conversation may be empty (an ID is
// made); Kind defaults to owner, which needs Workspace.
type NewParams struct {
	Conversation string `json:"conversation,omitempty"`
	Kind         Kind   `json:"kind,omitempty"`
	Workspace    string `json:"workspace,omitempty"`
}

// TakeParams is conversations.take; TTLSeconds 0 means auth.DefaultLeaseTTL.
type TakeParams struct {
	Conversation string `json:"conversation"`
	TTLSeconds   int    `json:"ttl_s,omitempty"`
}

// NativeParams is conversations.native: Seat claims the conversation, or
// with Release gives it back.
type NativeParams struct {
	Conversation string `json:"conversation"`
	Seat         string `json:"seat"`
	Release      bool   `json:"release,omitempty"`
}

// ListResult is conversations.list's answer.
type ListResult struct {
	Conversations []ConversationView `json:"conversations"`
}

// TakeAs takes the Take Control lease of in.Conversation for p.
func (s *Store) TakeAs(ctx context.Context, p auth.Principal, in TakeParams) (TakeResult, error) {
	if in.TTLSeconds < 0 || in.TTLSeconds > int(auth.MaxLeaseTTL/time.Second) {
		return TakeResult{}, invalid("ttl_s must be 0..%d", int(auth.MaxLeaseTTL/time.Second))
	}
	return s.Take(ctx, p, in.Conversation, time.Duration(in.TTLSeconds)*time.Second)
}

// Native claims the native seat of in.Conversation for in.Seat, or with
// in.Release gives it back. Operator only.
func (s *Store) Native(ctx context.Context, p auth.Principal, in NativeParams) (NativeResult, error) {
	if err := s.requireOperator(ctx, p); err != nil {
		return NativeResult{}, err
	}
	if in.Release {
		v, err := s.ReleaseNative(ctx, in.Conversation, in.Seat)
		return NativeResult{ConversationView: v}, err
	}
	return s.ClaimNative(ctx, in.Conversation, in.Seat)
}
