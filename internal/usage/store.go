// Package usage records every model call Raven makes (origin, model, tokens,
// duration, silent ticks) in raven.db, and holds ambient work to the owner's caps.
package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/sqlitedb"
)

// migrations own the usage tables. Append only.
var migrations = []string{`
CREATE TABLE usage_calls (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	at            INTEGER NOT NULL,
	origin        TEXT NOT NULL,
	model         TEXT NOT NULL,
	provider      TEXT NOT NULL,
	conversation  TEXT NOT NULL DEFAULT '',
	input_tokens  INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	cached_tokens INTEGER NOT NULL,
	duration_ms   INTEGER NOT NULL,
	ok            INTEGER NOT NULL,
	error         TEXT NOT NULL DEFAULT '',
	tick          INTEGER NOT NULL DEFAULT 0,
	silent        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX usage_calls_at ON usage_calls(at);
CREATE TABLE usage_pauses (
	scope        TEXT NOT NULL,
	period       TEXT NOT NULL,
	period_start INTEGER NOT NULL,
	at           INTEGER NOT NULL,
	PRIMARY KEY (scope, period, period_start)
);
`}

// maxErrorBytes bounds the error text kept per failed call.
const maxErrorBytes = 512

// Call is one model call.
type Call struct {
	ID           int64         `json:"id,omitempty"`
	At           time.Time     `json:"at"`
	Origin       string        `json:"origin"`
	Model        string        `json:"model"`
	Provider     string        `json:"provider"`
	Conversation string        `json:"conversation,omitempty"`
	Tokens       Tokens        `json:"tokens"`
	Duration     time.Duration `json:"duration_ns"`
	OK           bool          `json:"ok"`
	Error        string        `json:"error,omitempty"`
	// Tick marks a Sentinel or heartbeat tick's decision call; Silent one
	// whose tick delivered nothing.
	Tick   bool `json:"tick,omitempty"`
	Silent bool `json:"silent,omitempty"`
}

// Tokens are token counts; Cached is the part of Input read from the
// provider's cache.
type Tokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Cached int64 `json:"cached"`
}

// Total is what caps count: input plus output.
func (t Tokens) Total() int64 { return t.Input + t.Output }

func (t *Tokens) add(o Tokens) { t.Input += o.Input; t.Output += o.Output; t.Cached += o.Cached }

// Store is the usage tables of raven.db.
type Store struct {
	db  *sql.DB
	ins *sql.Stmt
	log *slog.Logger
}

// Open migrates db and prepares the insert every call pays for.
func Open(ctx context.Context, db *sql.DB, log *slog.Logger) (*Store, error) {
	if db == nil {
		return nil, errors.New("usage: nil database")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := sqlitedb.Migrate(ctx, db, "usage", migrations); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	ins, err := db.PrepareContext(ctx, `INSERT INTO usage_calls
		(at, origin, model, provider, conversation, input_tokens, output_tokens, cached_tokens, duration_ms, ok, error, tick, silent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("usage: prepare insert: %w", err)
	}
	return &Store{db: db, ins: ins, log: log}, nil
}

// Close releases the prepared statement.
func (s *Store) Close() error { return s.ins.Close() }

// Record writes c and returns its id.
func (s *Store) Record(ctx context.Context, c Call) (int64, error) {
	if len(c.Error) > maxErrorBytes {
		c.Error = strings.ToValidUTF8(c.Error[:maxErrorBytes], "")
	}
	res, err := s.ins.ExecContext(ctx, c.At.UnixNano(), c.Origin, c.Model, c.Provider, c.Conversation,
		c.Tokens.Input, c.Tokens.Output, c.Tokens.Cached, c.Duration.Milliseconds(), c.OK, c.Error, c.Tick, c.Silent)
	if err != nil {
		return 0, fmt.Errorf("usage: record call: %w", err)
	}
	return res.LastInsertId()
}

// MarkSilent marks the calls ids as silent ticks.
func (s *Store) MarkSilent(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	q := "UPDATE usage_calls SET silent = 1 WHERE id IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("usage: mark silent: %w", err)
	}
	return nil
}

// Calls returns every call at or after since, oldest first.
func (s *Store) Calls(ctx context.Context, since time.Time) ([]Call, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, at, origin, model, provider, conversation, input_tokens, output_tokens,
		cached_tokens, duration_ms, ok, error, tick, silent FROM usage_calls WHERE at >= ? ORDER BY at, id`, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("usage: read calls: %w", err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		var at, ms int64
		if err := rows.Scan(&c.ID, &at, &c.Origin, &c.Model, &c.Provider, &c.Conversation, &c.Tokens.Input, &c.Tokens.Output,
			&c.Tokens.Cached, &ms, &c.OK, &c.Error, &c.Tick, &c.Silent); err != nil {
			return nil, fmt.Errorf("usage: read calls: %w", err)
		}
		c.At, c.Duration = time.Unix(0, at), time.Duration(ms)*time.Millisecond
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: read calls: %w", err)
	}
	return out, nil
}

// spend is one (origin, model)'s tokens in the current day and month.
type spend struct {
	origin, model string
	day, month    Tokens
}

// periodSpend sums the tokens since monthStart, and since dayStart, per
// origin and model: what every cap check reads.
func (s *Store) periodSpend(ctx context.Context, dayStart, monthStart time.Time) ([]spend, error) {
	d := dayStart.UnixNano()
	rows, err := s.db.QueryContext(ctx, `SELECT origin, model,
		SUM(CASE WHEN at >= ? THEN input_tokens ELSE 0 END), SUM(CASE WHEN at >= ? THEN output_tokens ELSE 0 END),
		SUM(CASE WHEN at >= ? THEN cached_tokens ELSE 0 END),
		SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens)
		FROM usage_calls WHERE at >= ? GROUP BY origin, model`, d, d, d, monthStart.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("usage: read spend: %w", err)
	}
	defer rows.Close()
	var out []spend
	for rows.Next() {
		var sp spend
		if err := rows.Scan(&sp.origin, &sp.model, &sp.day.Input, &sp.day.Output, &sp.day.Cached,
			&sp.month.Input, &sp.month.Output, &sp.month.Cached); err != nil {
			return nil, fmt.Errorf("usage: read spend: %w", err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: read spend: %w", err)
	}
	return out, nil
}

// claimPause records that scope paused for the period starting at start;
// it reports whether this call is the first to say so (across processes),
// which is the one that notifies the owner.
func (s *Store) claimPause(ctx context.Context, scope, period string, start, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO usage_pauses (scope, period, period_start, at) VALUES (?, ?, ?, ?)`,
		scope, period, start.UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("usage: record pause: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
