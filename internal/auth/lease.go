package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lease bounds for Take Control.
const (
	DefaultLeaseTTL = 15 * time.Minute
	MinLeaseTTL     = 5 * time.Second
	MaxLeaseTTL     = 24 * time.Hour
	// maxConversationLen bounds conversation keys accepted here.
	maxConversationLen = 256
)

// Lease is a principal's Take Control of one conversation.
type Lease struct {
	Conversation string    `json:"conversation"`
	Holder       string    `json:"holder"`
	AcquiredAt   time.Time `json:"acquired_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	// Replaced names the previous active controller this take displaced,
	// when it was a different principal.
	Replaced string `json:"replaced,omitempty"`
}

// TakeControl makes p the active controller of conversation until now+ttl
// (ttl 0 means DefaultLeaseTTL). Only the operator and control devices may.
// There is one active controller per conversation: a take by another
// principal replaces the current holder at once (last explicit take wins —
// the owner holding the newer device is the one acting), and Lease.Replaced
// names whom it displaced. Taking again as the holder renews the lease.
// p is re-checked against the store: a rotated or revoked credential fails.
func (s *Store) TakeControl(ctx context.Context, p Principal, conversation string, ttl time.Duration) (Lease, error) {
	if err := validConversation(conversation); err != nil {
		return Lease{}, err
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return Lease{}, fmt.Errorf("%w: lease ttl %s: want %s..%s", ErrInvalid, ttl, MinLeaseTTL, MaxLeaseTTL)
	}
	now := s.clk.Now()
	lease := Lease{Conversation: conversation, Holder: p.Name, AcquiredAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC()}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := current(ctx, tx, p)
		if err != nil {
			return err
		}
		if !cur.IsOperator() && !cur.IsControlDevice() {
			return fmt.Errorf("%w: %s %q may not take control", ErrForbidden, describe(cur), cur.Name)
		}
		var prev string
		err = tx.QueryRowContext(ctx, `SELECT l.holder FROM auth_leases l JOIN auth_credentials c ON c.name = l.holder
			WHERE l.conversation = ? AND l.expires_at > ? AND c.revoked_at IS NULL AND c.generation = l.generation`,
			conversation, ms(now)).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if prev != p.Name {
			lease.Replaced = prev
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO auth_leases (conversation, holder, generation, acquired_at, expires_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT(conversation) DO UPDATE SET holder = excluded.holder,
			generation = excluded.generation, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
			conversation, cur.Name, cur.Generation, ms(now), ms(lease.ExpiresAt))
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("auth: take control of %s: %w", conversation, err)
	}
	return lease, nil
}

// Release ends p's lease on conversation. The operator may release anyone's
// lease; a device only its own (ErrForbidden otherwise). Releasing a
// conversation nobody controls is a no-op that reports false.
func (s *Store) Release(ctx context.Context, p Principal, conversation string) (bool, error) {
	if err := validConversation(conversation); err != nil {
		return false, err
	}
	released := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := current(ctx, tx, p)
		if err != nil {
			return err
		}
		var holder string
		var expires int64
		err = tx.QueryRowContext(ctx, `SELECT holder, expires_at FROM auth_leases WHERE conversation = ?`, conversation).Scan(&holder, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if holder != cur.Name && !cur.IsOperator() {
			return fmt.Errorf("%w: %q holds the lease, not %q", ErrForbidden, holder, cur.Name)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM auth_leases WHERE conversation = ?`, conversation); err != nil {
			return err
		}
		released = expires > ms(s.clk.Now())
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("auth: release %s: %w", conversation, err)
	}
	return released, nil
}

// ActiveController returns the name of the conversation's active controller
// now: a lease that has not expired, held by a credential that is neither
// revoked nor rotated since the take. Storage errors fail closed (not ok) and
// are returned by ActiveControllerErr.
func (s *Store) ActiveController(ctx context.Context, conversation string) (name string, ok bool) {
	name, ok, err := s.ActiveControllerErr(ctx, conversation)
	if err != nil {
		return "", false
	}
	return name, ok
}

// ActiveControllerErr is ActiveController with the storage error surfaced.
func (s *Store) ActiveControllerErr(ctx context.Context, conversation string) (string, bool, error) {
	var holder string
	err := s.db.QueryRowContext(ctx, `SELECT l.holder FROM auth_leases l JOIN auth_credentials c ON c.name = l.holder
		WHERE l.conversation = ? AND l.expires_at > ? AND c.revoked_at IS NULL AND c.generation = l.generation`,
		conversation, ms(s.clk.Now())).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("auth: active controller of %s: %w", conversation, err)
	}
	return holder, true, nil
}

// CanControl reports whether p may act as controller of conversation right
// now (answer its questions, steer it): the operator always; a control
// device only while it holds the active lease. Captains and read-only devices
// never. p is re-checked against the store (rotation and revocation count),
// and any storage failure denies.
func (s *Store) CanControl(ctx context.Context, p Principal, conversation string) bool {
	allowed := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := current(ctx, tx, p)
		if err != nil {
			return err
		}
		if cur.IsOperator() {
			allowed = true
			return nil
		}
		if !cur.IsControlDevice() {
			return nil
		}
		var n int
		err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM auth_leases WHERE conversation = ? AND holder = ? AND generation = ? AND expires_at > ?`,
			conversation, cur.Name, cur.Generation, ms(s.clk.Now())).Scan(&n)
		allowed = err == nil && n == 1
		return err
	})
	return err == nil && allowed
}

// Current re-reads p's credential now, failing with ErrRevoked or
// ErrUnauthenticated when it was revoked or rotated since p was verified.
func (s *Store) Current(ctx context.Context, p Principal) (Principal, error) {
	var out Principal
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = current(ctx, tx, p)
		return err
	})
	return out, err
}

func validConversation(c string) error {
	if c == "" || len(c) > maxConversationLen {
		return fmt.Errorf("%w: conversation key must be 1..%d bytes", ErrInvalid, maxConversationLen)
	}
	return nil
}

func describe(p Principal) string {
	if p.Role == RoleDevice && p.ReadOnly {
		return "read-only device"
	}
	return string(p.Role)
}
