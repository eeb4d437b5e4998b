// Package outbox keeps proactive messages (Sentinel nudges, cron and heartbeat
// results, system notices) that found no surface, in raven.db, until the owner next attaches.
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// migrations own the outbox_items table. Append only.
var migrations = []string{`
CREATE TABLE outbox_items (
	seq           INTEGER PRIMARY KEY AUTOINCREMENT,
	id            TEXT NOT NULL UNIQUE,
	origin        TEXT NOT NULL,
	kind          TEXT NOT NULL DEFAULT '',
	conversation  TEXT NOT NULL DEFAULT '',
	channel       TEXT NOT NULL DEFAULT '',
	chat_id       TEXT NOT NULL DEFAULT '',
	content       TEXT NOT NULL,
	extras        TEXT NOT NULL DEFAULT '',
	dedup_key     TEXT,
	created_at    INTEGER NOT NULL,
	queued_at     INTEGER NOT NULL,
	claimed_by    TEXT NOT NULL DEFAULT '',
	claim_until   INTEGER NOT NULL DEFAULT 0,
	delivered_to  TEXT NOT NULL DEFAULT '',
	delivered_at  INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX outbox_items_key ON outbox_items(dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX outbox_items_pending ON outbox_items(created_at, seq) WHERE delivered_at = 0;
CREATE INDEX outbox_items_delivered ON outbox_items(delivered_at) WHERE delivered_at > 0;
`}

// Defaults for Options.
const (
	// DefaultMaxPending bounds the waiting items: a month of a chatty
	// Sentinel and hourly cron results, far above what an owner reads.
	DefaultMaxPending = 1000
	// DefaultMaxContentBytes bounds one item's content plus extras.
	DefaultMaxContentBytes = 64 << 10
	// DefaultRetention is how long delivered rows stay (for `raven inbox`
	// forensics and idempotent Put keys) before Prune removes them.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultClaimLease is how long a Claim holds items for one surface; a
	// surface that dies while showing them gives them back when it ends.
	DefaultClaimLease = 2 * time.Minute
	// pruneEvery spaces the opportunistic prunes Put runs.
	pruneEvery = time.Hour
)

// Options are the Store's dependencies and limits; zero values take the
// Default* constants.
type Options struct {
	Clock           clock.Clock
	Logger          *slog.Logger
	MaxPending      int
	MaxContentBytes int
	Retention       time.Duration
	ClaimLease      time.Duration
	NewID           func() string
}

// Store is the outbox on one database. Safe for concurrent use, and for
// use by several processes on one database file.
//
// Delivery is exactly once across processes: a surface either Claims items
// (a lease, then MarkDelivered or Release) or marks them delivered directly;
// every state change is one immediate (write-locked) SQLite transaction, so
// two attachers racing for one item see one success and one
// ErrAlreadyDelivered or ErrClaimed. The outbox is bounded: at MaxPending
// waiting items Put refuses the new one with ErrFull (the caller logs it),
// so an accepted item is never dropped unseen. Delivered rows are pruned
// after Retention.
type Store struct {
	db   *sql.DB
	clk  clock.Clock
	log  *slog.Logger
	opts Options

	mu        sync.Mutex
	lastPrune time.Time
}

// Open migrates db (see sqlitedb.Open), prunes old delivered rows and
// returns the Store.
func Open(ctx context.Context, db *sql.DB, o Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("outbox: nil database")
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxContentBytes <= 0 {
		o.MaxContentBytes = DefaultMaxContentBytes
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.ClaimLease <= 0 {
		o.ClaimLease = DefaultClaimLease
	}
	if o.NewID == nil {
		o.NewID = func() string { return "ob_" + uuid.NewString() }
	}
	if err := sqlitedb.Migrate(ctx, db, "outbox", migrations); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	s := &Store{db: db, clk: o.Clock, log: o.Logger, opts: o}
	if _, err := s.Prune(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Put queues it and returns its id. A Key already queued (pending or
// delivered and not yet pruned) returns the existing id and queues nothing.
func (s *Store) Put(ctx context.Context, it Item) (string, error) {
	extras, err := validate(it, s.opts.MaxContentBytes)
	if err != nil {
		return "", err
	}
	now := s.clk.Now()
	if it.CreatedAt.IsZero() {
		it.CreatedAt = now
	}
	var key any
	if it.Key != "" {
		key = it.Key
	}
	id := ""
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if it.Key != "" {
			switch err := tx.QueryRowContext(ctx, `SELECT id FROM outbox_items WHERE dedup_key = ?`, it.Key).Scan(&id); {
			case err == nil:
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_items WHERE delivered_at = 0`).Scan(&n); err != nil {
			return err
		}
		if n >= s.opts.MaxPending {
			return fmt.Errorf("outbox: %d items wait (max %d); refusing %s %s: %w", n, s.opts.MaxPending, it.Origin, it.Kind, ErrFull)
		}
		id = s.opts.NewID()
		_, err := tx.ExecContext(ctx, `INSERT INTO outbox_items
			(id, origin, kind, conversation, channel, chat_id, content, extras, dedup_key, created_at, queued_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, string(it.Origin), it.Kind, it.Conversation, it.Channel, it.ChatID, it.Content, extras, key,
			it.CreatedAt.UnixNano(), now.UnixNano())
		return err
	})
	if err != nil {
		if errors.Is(err, ErrFull) {
			return "", err
		}
		return "", fmt.Errorf("outbox: put %s %s: %w", it.Origin, it.Kind, err)
	}
	s.maybePrune(ctx, now)
	return id, nil
}

// Pending returns up to limit undelivered items, oldest first (limit <= 0:
// all), claimed ones included with their claim.
func (s *Store) Pending(ctx context.Context, limit int) ([]Item, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+itemColumns+` FROM outbox_items
		WHERE delivered_at = 0 ORDER BY created_at, seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: pending: %w", err)
	}
	items, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: pending: %w", err)
	}
	return items, nil
}

// Count returns how many items wait.
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_items WHERE delivered_at = 0`).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox: count: %w", err)
	}
	return n, nil
}

// Get returns one item, delivered or not.
func (s *Store) Get(ctx context.Context, id string) (Item, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+itemColumns+` FROM outbox_items WHERE id = ?`, id)
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get %s: %w", id, err)
	}
	items, err := scanItems(rows)
	if err != nil {
		return Item{}, fmt.Errorf("outbox: get %s: %w", id, err)
	}
	if len(items) == 0 {
		return Item{}, fmt.Errorf("outbox: %s: %w", id, ErrNotFound)
	}
	return items[0], nil
}

// tx runs fn in one immediate transaction (sqlitedb opens with
// _txlock=immediate): the write lock is taken at BEGIN, so a read inside fn
// cannot go stale before the write that depends on it.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

const itemColumns = `id, origin, kind, conversation, channel, chat_id, content, extras, COALESCE(dedup_key, ''),
	created_at, queued_at, claimed_by, claim_until, delivered_to, delivered_at`

func scanItems(rows *sql.Rows) ([]Item, error) {
	defer rows.Close()
	var out []Item
	for rows.Next() {
		var it Item
		var origin, extras string
		var created, queued, claimUntil, delivered int64
		if err := rows.Scan(&it.ID, &origin, &it.Kind, &it.Conversation, &it.Channel, &it.ChatID, &it.Content, &extras, &it.Key,
			&created, &queued, &it.ClaimedBy, &claimUntil, &it.DeliveredTo, &delivered); err != nil {
			return nil, err
		}
		it.Origin = Origin(origin)
		if extras != "" {
			it.Extras = []byte(extras)
		}
		it.CreatedAt, it.QueuedAt = fromNanos(created), fromNanos(queued)
		it.ClaimedUntil, it.DeliveredAt = fromNanos(claimUntil), fromNanos(delivered)
		out = append(out, it)
	}
	return out, rows.Err()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
