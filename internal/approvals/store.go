// Package approvals is the durable contract by which the owner lets one exact
// command do more than the exec sandbox grants (network, a path outside the workspace).
package approvals

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// migrations own the approvals and approval_rules tables. Append only.
var migrations = []string{`
CREATE TABLE approvals (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	command      TEXT NOT NULL,
	dir          TEXT NOT NULL,
	grants       TEXT NOT NULL,
	conversation TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL CHECK (status IN ('pending','allowed','denied','expired','canceled')),
	decision     TEXT NOT NULL DEFAULT '',
	decided_by   TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	decided_at   INTEGER NOT NULL DEFAULT 0,
	consumed_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX approvals_pending ON approvals(status, seq);
CREATE TABLE approval_rules (
	command     TEXT NOT NULL,
	dir         TEXT NOT NULL,
	grants      TEXT NOT NULL,
	approval_id TEXT NOT NULL,
	created_by  TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (command, dir, grants)
);
`}

// Event kinds: one per request, one per resolution.
const (
	KindRequested = "approval.requested"
	KindResolved  = "approval.resolved"
)

// Decision is the owner's answer.
type Decision string

const (
	AllowOnce   Decision = "allow-once"
	AllowAlways Decision = "allow-always"
	Deny        Decision = "deny"
)

// Status is where a request stands.
type Status string

const (
	StatusPending  Status = "pending"
	StatusAllowed  Status = "allowed"
	StatusDenied   Status = "denied"
	StatusExpired  Status = "expired"
	StatusCanceled Status = "canceled"
)

// Defaults for Options.
const (
	DefaultTTL = 10 * time.Minute
	// DefaultPoll is how often a waiter re-reads its request, to see a
	// decision taken by another process (the CLI) on the same database.
	DefaultPoll = 500 * time.Millisecond
	// DefaultKeepResolved bounds the answered requests kept for listing.
	DefaultKeepResolved = 500
)

// Authority decides whether a principal may answer for a conversation.
// questions.Authority implements it: the operator, or the control device
// holding the conversation's Take Control lease; never a captain or a
// read-only device.
type Authority interface {
	CanAnswer(ctx context.Context, p auth.Principal, conversation string) error
}

// Options are the Store's dependencies.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Emit appends an event (KindRequested, KindResolved). May be nil.
	Emit func(ctx context.Context, kind, conversation string, payload any) error
	// Authority is required: there is no default that lets anyone decide.
	Authority    Authority
	TTL          time.Duration
	Poll         time.Duration
	KeepResolved int
	NewID        func() string
}

// Ask is what a command needs approved.
type Ask struct {
	Command string
	Dir     string
	Grants  []string
	// Conversation is the turn's conversation: whoever holds its Take
	// Control may answer.
	Conversation string
}

// Request is one approval request as stored.
type Request struct {
	ID           string    `json:"id"`
	Command      string    `json:"command"`
	Dir          string    `json:"dir"`
	Grants       []string  `json:"grants"`
	Conversation string    `json:"conversation,omitempty"`
	Status       Status    `json:"status"`
	Decision     Decision  `json:"decision,omitempty"`
	DecidedBy    string    `json:"decided_by,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	DecidedAt    time.Time `json:"decided_at,omitzero"`
	// Remembered is set on Ask's result when an allow-always rule
	// matched and no request was made.
	Remembered bool `json:"remembered,omitempty"`
}

// Store holds approval requests and allow-always rules in raven.db.
type Store struct {
	db   *sql.DB
	clk  clock.Clock
	log  *slog.Logger
	opts Options

	mu      sync.Mutex
	waiters map[string]chan struct{}
}

// Open migrates db and returns the store.
func Open(ctx context.Context, db *sql.DB, o Options) (*Store, error) {
	if o.Authority == nil {
		return nil, fmt.Errorf("%w: an Authority is required", ErrInvalid)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.KeepResolved <= 0 {
		o.KeepResolved = DefaultKeepResolved
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if err := sqlitedb.Migrate(ctx, db, "approvals", migrations); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return &Store{db: db, clk: o.Clock, log: o.Logger, opts: o, waiters: map[string]chan struct{}{}}, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func validate(a Ask) ([]string, string, error) {
	switch {
	case a.Command == "" || len(a.Command) > MaxCommandBytes || !utf8.ValidString(a.Command) || strings.ContainsRune(a.Command, 0):
		return nil, "", fmt.Errorf("%w: command must be 1..%d bytes of text", ErrInvalid, MaxCommandBytes)
	case a.Dir == "" || a.Dir[0] != '/' || len(a.Dir) > MaxDirBytes || strings.ContainsRune(a.Dir, 0):
		return nil, "", fmt.Errorf("%w: dir must be an absolute path", ErrInvalid)
	case len(a.Conversation) > 256:
		return nil, "", fmt.Errorf("%w: conversation key too long", ErrInvalid)
	}
	return canonicalGrants(a.Grants)
}

// Remembered reports whether an allow-always rule covers exactly this
// command, directory and grant set.
func (s *Store) Remembered(ctx context.Context, a Ask) (bool, error) {
	_, key, err := validate(a)
	if err != nil {
		return false, err
	}
	var n int
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM approval_rules WHERE command = ? AND dir = ? AND grants = ?`, a.Command, a.Dir, key).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("approvals: look up rule: %w", err)
	}
	return n > 0, nil
}

// Create stores a pending request and emits KindRequested.
func (s *Store) Create(ctx context.Context, a Ask) (Request, error) {
	grants, key, err := validate(a)
	if err != nil {
		return Request{}, err
	}
	now := s.clk.Now()
	r := Request{ID: s.opts.NewID(), Command: a.Command, Dir: a.Dir, Grants: grants, Conversation: a.Conversation,
		Status: StatusPending, CreatedAt: now.UTC(), ExpiresAt: now.Add(s.opts.TTL).UTC()}
	_, err = s.db.ExecContext(ctx, `INSERT INTO approvals (id, command, dir, grants, conversation, status, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)`, r.ID, r.Command, r.Dir, key, r.Conversation, ms(now), ms(r.ExpiresAt))
	if err != nil {
		return Request{}, fmt.Errorf("approvals: create: %w", err)
	}
	s.prune(ctx)
	s.emit(ctx, KindRequested, r)
	return r, nil
}

// Ask returns at once when an allow-always rule matches; otherwise it
// creates a request and waits for its decision (bounded by the TTL and
// ctx). It returns the allowed request, or an error wrapping ErrDenied,
// ErrExpired or ctx.Err(). An allow-once approval is consumed here: a
// second identical command needs a new one.
func (s *Store) Ask(ctx context.Context, a Ask) (Request, error) {
	ok, err := s.Remembered(ctx, a)
	if err != nil {
		return Request{}, err
	}
	if ok {
		grants, _, _ := canonicalGrants(a.Grants)
		return Request{Command: a.Command, Dir: a.Dir, Grants: grants, Conversation: a.Conversation,
			Status: StatusAllowed, Decision: AllowAlways, Remembered: true}, nil
	}
	r, err := s.Create(ctx, a)
	if err != nil {
		return Request{}, err
	}
	return s.Wait(ctx, r.ID)
}

// Wait blocks until request id is decided, expires, or ctx ends.
func (s *Store) Wait(ctx context.Context, id string) (Request, error) {
	wake := s.waiter(id)
	defer s.dropWaiter(id)
	for {
		if ctx.Err() != nil {
			return s.withdraw(ctx, id)
		}
		r, err := s.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return s.withdraw(ctx, id)
			}
			return Request{}, err
		}
		now := s.clk.Now()
		switch r.Status {
		case StatusAllowed:
			return s.consume(ctx, r)
		case StatusDenied:
			return r, fmt.Errorf("%w: %s (approval %s)", ErrDenied, r.DecidedBy, r.ID)
		case StatusExpired, StatusCanceled:
			return r, fmt.Errorf("%w: approval %s is %s", ErrResolved, r.ID, r.Status)
		}
		if !now.Before(r.ExpiresAt) {
			err := s.finish(context.WithoutCancel(ctx), r, StatusExpired)
			if errors.Is(err, ErrResolved) {
				continue // decided at the last moment: read it again
			}
			if err != nil {
				return r, err
			}
			return r, fmt.Errorf("%w: approval %s was not answered within %s", ErrExpired, r.ID, s.opts.TTL)
		}
		d := min(r.ExpiresAt.Sub(now), s.opts.Poll)
		t := s.clk.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.withdraw(ctx, id)
		case <-wake:
			t.Stop()
			wake = s.waiter(id)
		case <-t.C():
		}
	}
}

// withdraw cancels a pending request whose waiter is gone: even a decision
// that lands now must not run anything.
func (s *Store) withdraw(ctx context.Context, id string) (Request, error) {
	bg := context.WithoutCancel(ctx)
	r, err := s.Get(bg, id)
	if err == nil {
		if ferr := s.finish(bg, r, StatusCanceled); ferr == nil {
			r.Status = StatusCanceled
		}
	}
	return r, fmt.Errorf("approvals: waiting for %s: %w", id, ctx.Err())
}

// consume marks an allowed request used, so one approval runs the command
// once even if two waiters raced for it.
func (s *Store) consume(ctx context.Context, r Request) (Request, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE approvals SET consumed_at = ? WHERE id = ? AND status = 'allowed' AND consumed_at = 0`, ms(s.clk.Now()), r.ID)
	if err != nil {
		return r, fmt.Errorf("approvals: consume %s: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return r, fmt.Errorf("%w: approval %s was already used", ErrResolved, r.ID)
	}
	return r, nil
}

// finish moves a pending request to a terminal status without a decision
// (expired, canceled) and emits KindResolved.
func (s *Store) finish(ctx context.Context, r Request, st Status) error {
	res, err := s.db.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_at = ? WHERE id = ? AND status = 'pending'`, string(st), ms(s.clk.Now()), r.ID)
	if err != nil {
		return fmt.Errorf("approvals: %s %s: %w", st, r.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: %s", ErrResolved, r.ID)
	}
	r.Status = st
	s.emit(ctx, KindResolved, r)
	return nil
}

// Decide answers request id as p. It is answerable once: a second decision
// fails with ErrResolved, a late one with ErrExpired, and p must pass the
// Authority for the request's conversation (ErrForbidden otherwise).
// AllowAlways also remembers this exact command, directory and grant set.
func (s *Store) Decide(ctx context.Context, p auth.Principal, id string, d Decision) (Request, error) {
	switch d {
	case AllowOnce, AllowAlways, Deny:
	default:
		return Request{}, fmt.Errorf("%w: decision %q (want allow-once, allow-always or deny)", ErrInvalid, d)
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return Request{}, err
	}
	if err := s.opts.Authority.CanAnswer(ctx, p, r.Conversation); err != nil {
		return r, fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	now := s.clk.Now()
	if r.Status == StatusPending && !now.Before(r.ExpiresAt) {
		_ = s.finish(ctx, r, StatusExpired)
		return r, fmt.Errorf("%w: approval %s expired at %s", ErrExpired, id, r.ExpiresAt.Format(time.RFC3339))
	}
	st := StatusAllowed
	if d == Deny {
		st = StatusDenied
	}
	_, key, _ := canonicalGrants(r.Grants)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return r, fmt.Errorf("approvals: decide %s: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decision = ?, decided_by = ?, decided_at = ?
		WHERE id = ? AND status = 'pending' AND expires_at > ?`, string(st), string(d), p.Name, ms(now), id, ms(now))
	if err != nil {
		return r, fmt.Errorf("approvals: decide %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return r, fmt.Errorf("%w: approval %s is %s", ErrResolved, id, r.Status)
	}
	if d == AllowAlways {
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_rules (command, dir, grants, approval_id, created_by, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, r.Command, r.Dir, key, id, p.Name, ms(now)); err != nil {
			return r, fmt.Errorf("approvals: remember %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return r, fmt.Errorf("approvals: decide %s: %w", id, err)
	}
	r.Status, r.Decision, r.DecidedBy, r.DecidedAt = st, d, p.Name, now.UTC()
	s.emit(ctx, KindResolved, r)
	s.notify(id)
	return r, nil
}

// Get returns request id.
func (s *Store) Get(ctx context.Context, id string) (Request, error) {
	if id == "" || len(id) > 64 {
		return Request{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	rows, err := s.db.QueryContext(ctx, selectCols+` WHERE id = ?`, id)
	if err != nil {
		return Request{}, fmt.Errorf("approvals: get %s: %w", id, err)
	}
	rs, err := scan(rows)
	if err != nil {
		return Request{}, err
	}
	if len(rs) == 0 {
		return Request{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return rs[0], nil
}

// ListOptions filter List.
type ListOptions struct {
	// All includes resolved requests; by default only pending ones.
	All   bool
	Limit int
}

// List returns requests, newest first. A pending request past its expiry is
// shown as expired (the waiter, if any, records it).
func (s *Store) List(ctx context.Context, o ListOptions) ([]Request, error) {
	if o.Limit <= 0 || o.Limit > 1000 {
		o.Limit = 100
	}
	q := selectCols + ` WHERE status = 'pending' AND expires_at > ? ORDER BY seq DESC LIMIT ?`
	args := []any{ms(s.clk.Now()), o.Limit}
	if o.All {
		q = selectCols + ` ORDER BY seq DESC LIMIT ?`
		args = []any{o.Limit}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("approvals: list: %w", err)
	}
	rs, err := scan(rows)
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	for i := range rs {
		if rs[i].Status == StatusPending && !now.Before(rs[i].ExpiresAt) {
			rs[i].Status = StatusExpired
		}
	}
	return rs, nil
}

const selectCols = `SELECT id, command, dir, grants, conversation, status, decision, decided_by, created_at, expires_at, decided_at FROM approvals`

func scan(rows *sql.Rows) ([]Request, error) {
	defer rows.Close()
	var out []Request
	for rows.Next() {
		var r Request
		var grants, st, d string
		var created, expires, decided int64
		if err := rows.Scan(&r.ID, &r.Command, &r.Dir, &grants, &r.Conversation, &st, &d, &r.DecidedBy, &created, &expires, &decided); err != nil {
			return nil, fmt.Errorf("approvals: scan: %w", err)
		}
		if err := json.Unmarshal([]byte(grants), &r.Grants); err != nil {
			return nil, fmt.Errorf("approvals: corrupt grants of %s: %w", r.ID, err)
		}
		r.Status, r.Decision = Status(st), Decision(d)
		r.CreatedAt, r.ExpiresAt, r.DecidedAt = fromMS(created), fromMS(expires), fromMS(decided)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approvals: scan: %w", err)
	}
	return out, nil
}

// prune keeps the newest KeepResolved resolved requests.
func (s *Store) prune(ctx context.Context) {
	_, err := s.db.ExecContext(ctx, `DELETE FROM approvals WHERE status != 'pending' AND seq NOT IN
		(SELECT seq FROM approvals WHERE status != 'pending' ORDER BY seq DESC LIMIT ?)`, s.opts.KeepResolved)
	if err != nil {
		s.log.Warn("approvals: prune failed", "err", err)
	}
}

func (s *Store) emit(ctx context.Context, kind string, r Request) {
	if s.opts.Emit == nil {
		return
	}
	if err := s.opts.Emit(ctx, kind, r.Conversation, r); err != nil {
		s.log.Warn("approvals: event not recorded", "kind", kind, "id", r.ID, "err", err)
	}
}

func (s *Store) waiter(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.waiters[id]
	if !ok {
		ch = make(chan struct{})
		s.waiters[id] = ch
	}
	return ch
}

func (s *Store) dropWaiter(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters, id)
}

func (s *Store) notify(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.waiters[id]; ok {
		close(ch)
		delete(s.waiters, id)
	}
}
