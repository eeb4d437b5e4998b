package questions

import (
	"bytes"
	"context"
	"encoding/json"
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

// decodeOptional is decodeStrict that also takes absent params.
func decodeOptional(params json.RawMessage, v any) error {
	if t := bytes.TrimSpace(params); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return decodeStrict(params, v)
}

// ConversationsList serves conversations.list (params: {} or none).
func (s *Store) ConversationsList(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	if err := decodeOptional(params, &struct{}{}); err != nil {
		return nil, err
	}
	cs, err := s.ListConversations(ctx, p)
	if err != nil {
		return nil, err
	}
	return ListResult{Conversations: cs}, nil
}

// ConversationsShow serves conversations.show.
func (s *Store) ConversationsShow(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in ConversationParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.ShowConversation(ctx, p, in.Conversation)
}

// ConversationsOpen serves conversations.open: create or re-bind the owner
// conversation of the calling operator session.
func (s *Store) ConversationsOpen(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in OpenParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.OpenOwner(ctx, p, in.Conversation, in.Workspace)
}

// ConversationsNew serves conversations.new.
func (s *Store) ConversationsNew(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in NewParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.NewConversation(ctx, p, in.Conversation, in.Kind, in.Workspace)
}

// ConversationsReset serves conversations.reset.
func (s *Store) ConversationsReset(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in ConversationParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.ResetAs(ctx, p, in.Conversation)
}

// ConversationsTake serves conversations.take.
func (s *Store) ConversationsTake(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in TakeParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.TakeAs(ctx, p, in)
}

// TakeAs takes the Take Control lease of in.Conversation for p.
func (s *Store) TakeAs(ctx context.Context, p auth.Principal, in TakeParams) (TakeResult, error) {
	if in.TTLSeconds < 0 || in.TTLSeconds > int(auth.MaxLeaseTTL/time.Second) {
		return TakeResult{}, invalid("ttl_s must be 0..%d", int(auth.MaxLeaseTTL/time.Second))
	}
	return s.Take(ctx, p, in.Conversation, time.Duration(in.TTLSeconds)*time.Second)
}

// ConversationsRelease serves conversations.release.
func (s *Store) ConversationsRelease(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in ConversationParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.ReleaseControl(ctx, p, in.Conversation)
}

// ConversationsNative serves conversations.native: the local REPL (`raven
// chat --native CONV`) claims the native seat on start and releases it on
// exit. Operator only: the REPL runs with the operator token.
func (s *Store) ConversationsNative(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in NativeParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return s.Native(ctx, p, in)
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
