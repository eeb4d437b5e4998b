package outbox

import "errors"

// Errors are errors.Is-able; every returned error wraps one of them (or a
// database error) with the item and the limit involved.
var (
	// ErrInvalid: the item is malformed (unknown origin, empty or non-UTF-8
	// content, extras that are not a JSON object, an over-long field).
	ErrInvalid = errors.New("invalid outbox item")
	// ErrTooLarge: content plus extras exceed Options.MaxContentBytes.
	ErrTooLarge = errors.New("outbox item too large")
	// ErrFull: Options.MaxPending items already wait. The new item is
	// refused, never an old one dropped: an accepted item is a promise.
	ErrFull = errors.New("outbox full")
	// ErrNotFound: no item has that id (never existed or pruned).
	ErrNotFound = errors.New("outbox item not found")
	// ErrAlreadyDelivered: another surface delivered the item first.
	ErrAlreadyDelivered = errors.New("outbox item already delivered")
	// ErrClaimed: another surface holds a live claim on the item.
	ErrClaimed = errors.New("outbox item claimed by another surface")
)
