package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// excerptBytes bounds the excerpt of the last refused message.
const excerptBytes = 200

// Refusals counts the messages Put refused because the outbox was full,
// since the last ResetRefusals: what the owner never got to see.
type Refusals struct {
	Count       int       `json:"count"`
	FirstAt     time.Time `json:"first_at,omitzero"`
	LastAt      time.Time `json:"last_at,omitzero"`
	LastOrigin  Origin    `json:"last_origin,omitempty"`
	LastExcerpt string    `json:"last_excerpt,omitempty"`
}

func recordRefusal(ctx context.Context, tx *sql.Tx, it Item, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO outbox_refusals (id, count, first_at, last_at, last_origin, last_excerpt)
		VALUES (1, 1, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET count = count + 1, last_at = excluded.last_at,
			last_origin = excluded.last_origin, last_excerpt = excluded.last_excerpt`,
		now.UnixNano(), now.UnixNano(), string(it.Origin), excerpt(it.Content))
	return err
}

// Refusals reports the refused messages; Count 0 when there were none.
func (s *Store) Refusals(ctx context.Context) (Refusals, error) {
	var r Refusals
	var first, last int64
	var origin string
	err := s.db.QueryRowContext(ctx, `SELECT count, first_at, last_at, last_origin, last_excerpt FROM outbox_refusals WHERE id = 1`).
		Scan(&r.Count, &first, &last, &origin, &r.LastExcerpt)
	if errors.Is(err, sql.ErrNoRows) {
		return Refusals{}, nil
	}
	if err != nil {
		return Refusals{}, fmt.Errorf("outbox: refusals: %w", err)
	}
	r.FirstAt, r.LastAt, r.LastOrigin = fromNanos(first), fromNanos(last), Origin(origin)
	return r, nil
}

// ResetRefusals forgets the refusals once the owner has been told.
func (s *Store) ResetRefusals(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM outbox_refusals`); err != nil {
		return fmt.Errorf("outbox: reset refusals: %w", err)
	}
	return nil
}

// excerpt cuts s to at most excerptBytes on a rune boundary.
func excerpt(s string) string {
	if len(s) <= excerptBytes {
		return s
	}
	cut := excerptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
