package outbox

import (
	"context"
	"fmt"
	"time"
)

// Prune deletes items delivered more than Options.Retention ago and
// returns how many. Undelivered items are never pruned.
func (s *Store) Prune(ctx context.Context) (int, error) {
	now := s.clk.Now()
	res, err := s.db.ExecContext(ctx, `DELETE FROM outbox_items WHERE delivered_at > 0 AND delivered_at < ?`, now.Add(-s.opts.Retention).UnixNano())
	if err != nil {
		return 0, fmt.Errorf("outbox: prune: %w", err)
	}
	n, _ := res.RowsAffected()
	s.mu.Lock()
	s.lastPrune = now
	s.mu.Unlock()
	if n > 0 {
		s.log.Info("outbox: pruned delivered items", "count", n, "older_than", s.opts.Retention)
	}
	return int(n), nil
}

// maybePrune prunes at most once per pruneEvery, so a long-running gateway
// keeps the table small without a timer goroutine.
func (s *Store) maybePrune(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastPrune) >= pruneEvery
	s.mu.Unlock()
	if !due {
		return
	}
	if _, err := s.Prune(ctx); err != nil {
		s.log.Warn("outbox: prune", "err", err)
	}
}
