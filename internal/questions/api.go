package questions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
)

// Control-API methods of the conversation lifecycle, with their access
// levels (see Methods).
const (
	MethodConversationsList    = "conversations.list"    // controlapi.Read
	MethodConversationsShow    = "conversations.show"    // controlapi.Read
	MethodConversationsOpen    = "conversations.open"    // controlapi.Operator
	MethodConversationsNew     = "conversations.new"     // controlapi.Operator
	MethodConversationsReset   = "conversations.reset"   // controlapi.Control
	MethodConversationsTake    = "conversations.take"    // controlapi.Control
	MethodConversationsRelease = "conversations.release" // controlapi.Control
	MethodConversationsNative  = "conversations.native"  // controlapi.Operator
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
	if in.TTLSeconds < 0 || in.TTLSeconds > int(auth.MaxLeaseTTL/time.Second) {
		return nil, invalid("ttl_s must be 0..%d", int(auth.MaxLeaseTTL/time.Second))
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
	if err := s.requireOperator(ctx, p); err != nil {
		return nil, err
	}
	if in.Release {
		return s.ReleaseNative(ctx, in.Conversation, in.Seat)
	}
	return s.ClaimNative(ctx, in.Conversation, in.Seat)
}

// Method is one control-API method of this package: its name, the access
// level to register it with, and its handler.
type Method struct {
	Name   string
	Access controlapi.Access
	Handle func(context.Context, auth.Principal, json.RawMessage) (any, error)
}

// Routes lists the conversation lifecycle methods for the runtime to
// register on its control server, each wrapped with RPCResult:
//
//	for _, m := range store.Methods() {
//		server.Handle(m.Name, m.Access, func(ctx context.Context, c *controlapi.Call) (any, error) {
//			return questions.RPCResult(m.Handle(ctx, c.Principal, c.Params))
//		})
//	}
func (s *Store) Methods() []Method {
	return []Method{
		{MethodConversationsList, controlapi.Read, s.ConversationsList},
		{MethodConversationsShow, controlapi.Read, s.ConversationsShow},
		{MethodConversationsOpen, controlapi.Operator, s.ConversationsOpen},
		{MethodConversationsNew, controlapi.Operator, s.ConversationsNew},
		{MethodConversationsReset, controlapi.Control, s.ConversationsReset},
		{MethodConversationsTake, controlapi.Control, s.ConversationsTake},
		{MethodConversationsRelease, controlapi.Control, s.ConversationsRelease},
		{MethodConversationsNative, controlapi.Operator, s.ConversationsNative},
	}
}

// ErrorData is the data of a JSON-RPC error from this package's methods:
// the precise code and reason, which the JSON-RPC code is coarser than.
// Same wire shape as the gateway's QuestionErrorData.
type ErrorData struct {
	Code   string `json:"questions_code"`
	Reason string `json:"reason,omitempty"`
}

// RPCResult maps this package's typed errors onto control-API errors and
// passes everything else through.
func RPCResult(v any, err error) (any, error) {
	if err == nil {
		return v, nil
	}
	var qe *Error
	if !errors.As(err, &qe) {
		return nil, err
	}
	msg := err.Error()
	var re *controlapi.RPCError
	switch qe.Code() {
	case CodeInvalidParams, CodeNotAnswer:
		re = controlapi.InvalidParams("%s", msg)
	case CodeForbidden:
		re = controlapi.Forbidden("%s", msg)
	case CodeNotFound:
		re = controlapi.NotFound("%s", msg)
	case CodeConflict, CodeExpired:
		re = controlapi.Conflict("%s", msg)
	default:
		re = controlapi.Errorf(controlapi.CodeUnavailable, "%s", msg)
	}
	re.Data = ErrorData{Code: qe.Code(), Reason: qe.Reason}
	return nil, re
}
