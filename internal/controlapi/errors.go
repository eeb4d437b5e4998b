package controlapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/eventlog"
)

// JSON-RPC 2.0 error codes, and Raven's application codes (in the
// implementation-defined server range -32000..-32099):
//
//	-32700 parse error       the frame is not JSON
//	-32600 invalid request   not a JSON-RPC 2.0 request object, or the frame is too large (connection then closes)
//	-32601 method not found
//	-32602 invalid params    unknown field, wrong type, oversize string or list, bad value
//	-32603 internal error    details are logged server-side, never sent
//	-32001 unauthorized      no auth.hello yet, or the token is unknown, rotated or revoked
//	-32003 forbidden         authenticated, but the role may not make this call
//	-32004 not_found         the named thing does not exist
//	-32009 conflict          the request contradicts current state (e.g. a different answer to a consumed question)
//	-32010 unavailable       the gateway is overloaded or shutting down; retry later
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeUnauthorized   = -32001
	CodeForbidden      = -32003
	CodeNotFound       = -32004
	CodeConflict       = -32009
	CodeUnavailable    = -32010
)

// RPCError is a JSON-RPC error object. Handlers return one to choose the
// code; the client returns one for every error response.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Is makes errors.Is(err, &RPCError{Code: c}) match on the code alone.
func (e *RPCError) Is(target error) bool {
	t, ok := target.(*RPCError)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Errorf returns an *RPCError with code and a formatted message.
func Errorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParams, NotFound, Conflict and Forbidden are shorthands for handlers.
func InvalidParams(format string, args ...any) *RPCError {
	return Errorf(CodeInvalidParams, format, args...)
}
func NotFound(format string, args ...any) *RPCError { return Errorf(CodeNotFound, format, args...) }
func Conflict(format string, args ...any) *RPCError { return Errorf(CodeConflict, format, args...) }
func Forbidden(format string, args ...any) *RPCError {
	return Errorf(CodeForbidden, format, args...)
}

// IsCode reports whether err is an *RPCError with code.
func IsCode(err error, code int) bool {
	var re *RPCError
	return errors.As(err, &re) && re.Code == code
}

// toRPCError maps a handler error to the wire. Unknown errors become a bare
// internal error; ok is false so the caller logs the detail.
func toRPCError(err error) (e *RPCError, known bool) {
	var re *RPCError
	switch {
	case errors.As(err, &re):
		return re, true
	case errors.Is(err, auth.ErrRevoked):
		return Errorf(CodeUnauthorized, "credential revoked"), true
	case errors.Is(err, auth.ErrUnauthenticated):
		return Errorf(CodeUnauthorized, "unauthenticated"), true
	case errors.Is(err, auth.ErrForbidden):
		return Errorf(CodeForbidden, "%s", trimPrefix(err)), true
	case errors.Is(err, auth.ErrNotFound):
		return Errorf(CodeNotFound, "%s", trimPrefix(err)), true
	case errors.Is(err, auth.ErrExists):
		return Errorf(CodeConflict, "%s", trimPrefix(err)), true
	case errors.Is(err, auth.ErrInvalid), errors.Is(err, eventlog.ErrInvalid):
		return Errorf(CodeInvalidParams, "%s", trimPrefix(err)), true
	case errors.Is(err, context.Canceled), errors.Is(err, eventlog.ErrClosed):
		return Errorf(CodeUnavailable, "gateway shutting down"), true
	}
	return Errorf(CodeInternal, "internal error"), false
}

// trimPrefix keeps the message readable; the wrapped chain is for logs.
func trimPrefix(err error) string { return err.Error() }
