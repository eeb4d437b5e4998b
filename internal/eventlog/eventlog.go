// Package eventlog is Raven's append-only log of notable events in raven.db:
// monotonically increasing sequence numbers, bounded retention, live fan-out.
package eventlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

var migrations = []string{
	`CREATE TABLE eventlog_events (
		seq          INTEGER PRIMARY KEY AUTOINCREMENT,
		kind         TEXT NOT NULL,
		conversation TEXT NOT NULL DEFAULT '',
		at           INTEGER NOT NULL,
		payload      BLOB
	);
	CREATE INDEX eventlog_events_at ON eventlog_events(at);`,
}

// Limits on what Append accepts and Tail returns.
const (
	MaxKindLen         = 64
	MaxConversationLen = 256
	MaxPayloadBytes    = 64 << 10
	MaxTailLimit       = 1000
	DefaultTailLimit   = 100
)

// Retention defaults (config gateway.events_max_count, gateway.events_max_age).
const (
	DefaultMaxCount = 100000
	DefaultMaxAge   = 30 * 24 * time.Hour
)

// Errors.
var (
	// ErrInvalid: bad input to Append or Tail.
	ErrInvalid = errors.New("eventlog: invalid input")
	// ErrSlowSubscriber closes a subscription whose reader fell more than
	// its queue behind; the subscriber resumes with Tail/Subscribe from the
	// last sequence it saw.
	ErrSlowSubscriber = errors.New("eventlog: subscriber too slow; dropped")
	// ErrClosed closes subscriptions when the log is closed.
	ErrClosed = errors.New("eventlog: closed")
)

// Event is one logged event.
type Event struct {
	Seq          int64           `json:"seq"`
	Kind         string          `json:"kind"`
	Conversation string          `json:"conversation,omitempty"`
	Time         time.Time       `json:"time"`
	Payload      json.RawMessage `json:"payload,omitempty"`
}

// Record is one event to append in a batch.
type Record struct {
	Kind         string
	Conversation string
	Payload      any
}

// Options configures a Log. Zero values take the documented defaults.
type Options struct {
	Clock  clock.Clock  // default clock.Real()
	Logger *slog.Logger // default discards
	// MaxCount and MaxAge bound retention (config gateway.events_max_count,
	// gateway.events_max_age). Defaults DefaultMaxCount and DefaultMaxAge.
	MaxCount int
	MaxAge   time.Duration
	// SubscriberQueue is each live subscriber's buffer (default 1024). A
	// subscriber that lets it fill is dropped so Append never blocks.
	SubscriberQueue int
	// PruneEvery amortises retention: prune after this many appends
	// (default 512), plus at Open and on Prune.
	PruneEvery int
}

// Log is the event log. Appends and fan-out happen in this process; events
// appended by another process sharing raven.db (e.g. `raven chat`) are seen
// by Tail and by a Subscribe backfill, not pushed live.
type Log struct {
	db   *sql.DB
	clk  clock.Clock
	log  *slog.Logger
	opts Options

	mu         sync.Mutex // serialises append+fan-out so subscribers see seq order
	subs       map[*Subscription]struct{}
	sincePrune int
	closed     bool
	insertStmt *sql.Stmt
	pruneMu    sync.Mutex
}

// Open migrates the event tables in db, prunes once, and returns the log.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Log, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxCount <= 0 {
		opts.MaxCount = DefaultMaxCount
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.SubscriberQueue <= 0 {
		opts.SubscriberQueue = 1024
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = 512
	}
	if err := sqlitedb.Migrate(ctx, db, "eventlog", migrations); err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	stmt, err := db.PrepareContext(ctx, `INSERT INTO eventlog_events (kind, conversation, at, payload) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("eventlog: prepare: %w", err)
	}
	l := &Log{db: db, clk: opts.Clock, log: opts.Logger, opts: opts, subs: map[*Subscription]struct{}{}, insertStmt: stmt}
	if _, err := l.Prune(ctx); err != nil {
		stmt.Close()
		return nil, err
	}
	return l, nil
}

// Close ends every live subscription with ErrClosed. It does not close db.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	for s := range l.subs {
		l.dropLocked(s, ErrClosed)
	}
	return l.insertStmt.Close()
}

type prepared struct {
	kind, conv string
	payload    []byte
}

func prepare(kind, conv string, payload any) (prepared, error) {
	if kind == "" || len(kind) > MaxKindLen {
		return prepared{}, fmt.Errorf("%w: kind must be 1..%d bytes", ErrInvalid, MaxKindLen)
	}
	if len(conv) > MaxConversationLen {
		return prepared{}, fmt.Errorf("%w: conversation longer than %d bytes", ErrInvalid, MaxConversationLen)
	}
	p := prepared{kind: kind, conv: conv}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return prepared{}, fmt.Errorf("%w: payload of %s: %v", ErrInvalid, kind, err)
		}
		if len(b) > MaxPayloadBytes {
			return prepared{}, fmt.Errorf("%w: payload of %s is %d bytes (max %d)", ErrInvalid, kind, len(b), MaxPayloadBytes)
		}
		if string(b) != "null" {
			p.payload = b
		}
	}
	return p, nil
}

// Append logs one event and returns its sequence number. It never waits on
// subscribers.
func (l *Log) Append(ctx context.Context, kind, conversation string, payload any) (int64, error) {
	p, err := prepare(kind, conversation, payload)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	now := l.clk.Now()
	res, err := l.insertStmt.ExecContext(ctx, p.kind, p.conv, now.UnixNano(), p.payload)
	if err != nil {
		l.mu.Unlock()
		return 0, fmt.Errorf("eventlog: append %s: %w", kind, err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		l.mu.Unlock()
		return 0, fmt.Errorf("eventlog: append %s: %w", kind, err)
	}
	l.fanoutLocked(Event{Seq: seq, Kind: p.kind, Conversation: p.conv, Time: now.UTC(), Payload: p.payload})
	due := l.countLocked(1)
	l.mu.Unlock()
	l.maybePrune(ctx, due)
	return seq, nil
}

// AppendBatch logs several events in one transaction (much cheaper per event
// than separate Appends) and returns their sequence numbers in order. Either
// all are logged or none.
func (l *Log) AppendBatch(ctx context.Context, recs []Record) ([]int64, error) {
	ps := make([]prepared, len(recs))
	for i, r := range recs {
		p, err := prepare(r.Kind, r.Conversation, r.Payload)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		ps[i] = p
	}
	if len(ps) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	now := l.clk.Now()
	evs, err := l.insertBatch(ctx, ps, now)
	if err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("eventlog: append batch: %w", err)
	}
	seqs := make([]int64, len(evs))
	for i, ev := range evs {
		l.fanoutLocked(ev)
		seqs[i] = ev.Seq
	}
	due := l.countLocked(len(evs))
	l.mu.Unlock()
	l.maybePrune(ctx, due)
	return seqs, nil
}

func (l *Log) insertBatch(ctx context.Context, ps []prepared, now time.Time) ([]Event, error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	stmt := tx.StmtContext(ctx, l.insertStmt)
	evs := make([]Event, len(ps))
	for i, p := range ps {
		res, err := stmt.ExecContext(ctx, p.kind, p.conv, now.UnixNano(), p.payload)
		if err != nil {
			return nil, err
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		evs[i] = Event{Seq: seq, Kind: p.kind, Conversation: p.conv, Time: now.UTC(), Payload: p.payload}
	}
	return evs, tx.Commit()
}

func (l *Log) countLocked(n int) bool {
	l.sincePrune += n
	if l.sincePrune >= l.opts.PruneEvery {
		l.sincePrune = 0
		return true
	}
	return false
}

func (l *Log) maybePrune(ctx context.Context, due bool) {
	if !due {
		return
	}
	if n, err := l.Prune(ctx); err != nil {
		l.log.Warn("eventlog: prune failed", "err", err)
	} else if n > 0 {
		l.log.Debug("eventlog: pruned", "events", n)
	}
}

// Prune deletes events beyond the retention bounds (count and age) and
// reports how many it deleted. Append calls it every PruneEvery events; a
// long-idle gateway may call it periodically so age still applies.
func (l *Log) Prune(ctx context.Context) (int64, error) {
	l.pruneMu.Lock()
	defer l.pruneMu.Unlock()
	cutoff := l.clk.Now().Add(-l.opts.MaxAge).UnixNano()
	res, err := l.db.ExecContext(ctx, `DELETE FROM eventlog_events
		WHERE seq <= (SELECT MAX(seq) FROM eventlog_events) - ? OR at < ?`, l.opts.MaxCount, cutoff)
	if err != nil {
		return 0, fmt.Errorf("eventlog: prune: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Tail returns up to limit events with seq > afterSeq, oldest first (limit
// 0 means DefaultTailLimit; at most MaxTailLimit), and the oldest sequence
// still retained. When afterSeq+1 < oldestRetained the caller has missed
// the events in between; with an empty log oldestRetained is the next
// sequence to be issued.
func (l *Log) Tail(ctx context.Context, afterSeq int64, limit int) ([]Event, int64, error) {
	if limit == 0 {
		limit = DefaultTailLimit
	}
	if limit < 0 || limit > MaxTailLimit || afterSeq < 0 {
		return nil, 0, fmt.Errorf("%w: tail after %d limit %d: want after >= 0, limit 0..%d", ErrInvalid, afterSeq, limit, MaxTailLimit)
	}
	oldest, err := l.OldestRetained(ctx)
	if err != nil {
		return nil, 0, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT seq, kind, conversation, at, payload FROM eventlog_events
		WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("eventlog: tail: %w", err)
	}
	defer rows.Close()
	evs := make([]Event, 0, min(limit, 64))
	for rows.Next() {
		var ev Event
		var at int64
		var payload []byte
		if err := rows.Scan(&ev.Seq, &ev.Kind, &ev.Conversation, &at, &payload); err != nil {
			return nil, 0, fmt.Errorf("eventlog: tail: %w", err)
		}
		ev.Time = time.Unix(0, at).UTC()
		if len(payload) > 0 {
			ev.Payload = payload
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("eventlog: tail: %w", err)
	}
	return evs, oldest, nil
}

// OldestRetained returns the oldest retained sequence, or the next sequence
// to be issued when the log is empty.
func (l *Log) OldestRetained(ctx context.Context) (int64, error) {
	var oldest int64
	err := l.db.QueryRowContext(ctx, `SELECT COALESCE(
		(SELECT MIN(seq) FROM eventlog_events),
		(SELECT seq + 1 FROM sqlite_sequence WHERE name = 'eventlog_events'),
		1)`).Scan(&oldest)
	if err != nil {
		return 0, fmt.Errorf("eventlog: oldest retained: %w", err)
	}
	return oldest, nil
}

// LastSeq returns the highest sequence issued so far (0 if none).
func (l *Log) LastSeq(ctx context.Context) (int64, error) {
	var last int64
	err := l.db.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'eventlog_events'), 0)`).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("eventlog: last seq: %w", err)
	}
	return last, nil
}
