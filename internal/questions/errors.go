// Package questions lets Raven ask its owner: the in-turn ask_user broker
// (clarify.request/clarify.respond) and durable owner conversation questions.
package questions

import (
	"errors"
	"fmt"
)

// Error codes a gateway maps onto control-API errors.
const (
	CodeInvalidParams = "invalid_params"
	CodeForbidden     = "forbidden"
	CodeConflict      = "conflict"
	CodeNotFound      = "not_found"
	CodeExpired       = "expired"
	// CodeUnavailable: the conversation cannot hold a question right now
	// (wrong kind, native owner, no valid workspace, no authenticated owner).
	CodeUnavailable = "unavailable"
	// CodeNotAnswer: an inbound channel message is not an answer (a /command);
	// the gateway handles it as an ordinary message.
	CodeNotAnswer = "not_answer"
)

// Error is a typed refusal. Code is stable and machine-readable; Reason
// refines it (for conflicts: revision_mismatch, already_answered, …).
type Error struct {
	code   string
	Reason string
	Msg    string
}

// Code returns the stable error code.
func (e *Error) Code() string { return e.code }

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("questions: %s (%s): %s", e.code, e.Reason, e.Msg)
	}
	return fmt.Sprintf("questions: %s: %s", e.code, e.Msg)
}

// Is matches any *Error with the same code, so callers can test
// errors.Is(err, questions.ErrConflict).
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.code == e.code && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels for errors.Is.
var (
	ErrInvalidParams = &Error{code: CodeInvalidParams}
	ErrForbidden     = &Error{code: CodeForbidden}
	ErrConflict      = &Error{code: CodeConflict}
	ErrNotFound      = &Error{code: CodeNotFound}
	ErrExpired       = &Error{code: CodeExpired}
	ErrUnavailable   = &Error{code: CodeUnavailable}
	ErrNotAnswer     = &Error{code: CodeNotAnswer}
)

func newErr(code, reason, format string, args ...any) *Error {
	return &Error{code: code, Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return newErr(CodeInvalidParams, "", format, args...)
}

// CodeOf returns the code of a typed error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}
