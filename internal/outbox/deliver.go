package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Claim leases up to limit of the oldest undelivered items to surface for
// Options.ClaimLease and returns them (limit <= 0: all). Items another
// surface holds under a live lease are skipped; surface's own claims are
// renewed. The caller shows each item, then MarkDelivered (or Release if it
// could not). A surface names one attachment ("tui:<session>"), not a kind
// of surface: two TUIs must not share a name.
func (s *Store) Claim(ctx context.Context, surface string, limit int) ([]Item, error) {
	if surface == "" {
		return nil, fmt.Errorf("outbox: claim: empty surface: %w", ErrInvalid)
	}
	if limit <= 0 {
		limit = -1
	}
	now := s.clk.Now().UnixNano()
	until := s.clk.Now().Add(s.opts.ClaimLease).UnixNano()
	var items []Item
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+itemColumns+` FROM outbox_items
			WHERE delivered_at = 0 AND (claim_until <= ? OR claimed_by = ?)
			ORDER BY created_at, seq LIMIT ?`, now, surface, limit)
		if err != nil {
			return err
		}
		if items, err = scanItems(rows); err != nil {
			return err
		}
		for i := range items {
			if _, err := tx.ExecContext(ctx, `UPDATE outbox_items SET claimed_by = ?, claim_until = ? WHERE id = ?`, surface, until, items[i].ID); err != nil {
				return err
			}
			items[i].ClaimedBy, items[i].ClaimedUntil = surface, fromNanos(until)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim for %s: %w", surface, err)
	}
	return items, nil
}

// MarkDelivered records that surface showed item id. Repeating it for the
// same surface is a no-op; if another surface delivered it first the error
// is ErrAlreadyDelivered, if another holds a live claim ErrClaimed, so the
// item reaches the owner exactly once.
func (s *Store) MarkDelivered(ctx context.Context, id, surface string) error {
	if surface == "" {
		return fmt.Errorf("outbox: deliver %s: empty surface: %w", id, ErrInvalid)
	}
	now := s.clk.Now().UnixNano()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st, err := loadState(ctx, tx, id)
		if err != nil {
			return err
		}
		switch {
		case st.deliveredAt != 0 && st.deliveredTo == surface:
			return nil
		case st.deliveredAt != 0:
			return fmt.Errorf("outbox: %s delivered to %s at %s: %w", id, st.deliveredTo, fromNanos(st.deliveredAt).Format("2006-01-02T15:04:05Z07:00"), ErrAlreadyDelivered)
		case st.claimedBy != "" && st.claimedBy != surface && st.claimUntil > now:
			return fmt.Errorf("outbox: %s claimed by %s until %s: %w", id, st.claimedBy, fromNanos(st.claimUntil).Format("15:04:05Z07:00"), ErrClaimed)
		}
		_, err = tx.ExecContext(ctx, `UPDATE outbox_items SET delivered_to = ?, delivered_at = ?, claimed_by = '', claim_until = 0 WHERE id = ?`, surface, now, id)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyDelivered) && !errors.Is(err, ErrClaimed) {
		return fmt.Errorf("outbox: deliver %s to %s: %w", id, surface, err)
	}
	if err == nil {
		s.log.Debug("outbox: delivered", "id", id, "surface", surface)
	}
	return err
}

// Release gives back surface's claim on id, so the next attach gets it. A
// claim held by someone else, or none, is left alone.
func (s *Store) Release(ctx context.Context, id, surface string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := loadState(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE outbox_items SET claimed_by = '', claim_until = 0
			WHERE id = ? AND claimed_by = ? AND delivered_at = 0`, id, surface)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("outbox: release %s for %s: %w", id, surface, err)
	}
	return err
}

type itemState struct {
	claimedBy, deliveredTo  string
	claimUntil, deliveredAt int64
}

func loadState(ctx context.Context, tx *sql.Tx, id string) (itemState, error) {
	var st itemState
	err := tx.QueryRowContext(ctx, `SELECT claimed_by, claim_until, delivered_to, delivered_at FROM outbox_items WHERE id = ?`, id).
		Scan(&st.claimedBy, &st.claimUntil, &st.deliveredTo, &st.deliveredAt)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("outbox: %s: %w", id, ErrNotFound)
	}
	return st, err
}
