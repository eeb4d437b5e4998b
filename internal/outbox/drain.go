package outbox

import (
	"context"
	"errors"
	"fmt"
)

// drainBatch is how many items one Drain round claims: small enough that
// a second attacher is not locked out of everything by a slow surface.
const drainBatch = 20

// Drain is the attach path: it hands the waiting items, oldest first, to
// show under surface's claim and marks each delivered once show returns
// nil. When show fails, that item and the rest of its batch are released
// for the next attach and Drain returns the error. It returns how many
// items show took. Another surface draining at the same time gets the
// other items, never the same one.
func (s *Store) Drain(ctx context.Context, surface string, show func(context.Context, Item) error) (int, error) {
	n := 0
	for {
		items, err := s.Claim(ctx, surface, drainBatch)
		if err != nil || len(items) == 0 {
			return n, err
		}
		for i, it := range items {
			if err := show(ctx, it); err != nil {
				for _, rest := range items[i:] {
					if rerr := s.Release(context.WithoutCancel(ctx), rest.ID, surface); rerr != nil {
						s.log.Warn("outbox: release after a failed show", "id", rest.ID, "surface", surface, "err", rerr)
					}
				}
				return n, fmt.Errorf("outbox: show %s on %s: %w", it.ID, surface, err)
			}
			switch err := s.MarkDelivered(ctx, it.ID, surface); {
			case err == nil:
				n++
			case errors.Is(err, ErrAlreadyDelivered), errors.Is(err, ErrClaimed):
				// The lease ran out while show ran and another surface took
				// the item: it was shown there too, so count it delivered here.
				n++
				s.log.Warn("outbox: lease expired while showing", "id", it.ID, "surface", surface, "err", err)
			default:
				return n, err
			}
		}
	}
}
