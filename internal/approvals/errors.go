package approvals

import "errors"

// Errors of the approvals contract; every returned error wraps one.
var (
	ErrInvalid  = errors.New("approvals: invalid request")
	ErrNotFound = errors.New("approvals: no such approval")
	// ErrResolved means the approval was already answered (it is
	// answerable once), or expired or was withdrawn.
	ErrResolved  = errors.New("approvals: already resolved")
	ErrExpired   = errors.New("approvals: expired unanswered")
	ErrForbidden = errors.New("approvals: not allowed to decide")
	// ErrDenied is Ask's answer when the owner denied the command.
	ErrDenied = errors.New("approvals: denied by the owner")
)
