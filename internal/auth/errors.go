package auth

import "errors"

// Typed errors. Callers match them with errors.Is; the control API maps them
// to its JSON-RPC error codes.
var (
	// ErrUnauthenticated: the token is unknown, malformed, or was rotated away.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrRevoked: the token belongs to a revoked credential.
	ErrRevoked = errors.New("credential revoked")
	// ErrForbidden: the principal is authenticated but lacks the authority.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no credential (or lease) by that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: a live credential already has that name.
	ErrExists = errors.New("credential exists")
	// ErrInvalid: bad input (name, role, flags, ttl).
	ErrInvalid = errors.New("invalid input")
)
