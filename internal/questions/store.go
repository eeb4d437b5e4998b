package questions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// migrations own the conversations, questions and question_runs tables.
// Append only; never edit a released migration.
var migrations = []string{`
CREATE TABLE conversations (
	id               TEXT PRIMARY KEY,
	kind             TEXT NOT NULL CHECK (kind IN ('owner','native','room','global','side')),
	incarnation      TEXT NOT NULL,
	revision         INTEGER NOT NULL,
	ws_path          TEXT NOT NULL DEFAULT '',
	ws_dev           INTEGER NOT NULL DEFAULT 0,
	ws_ino           INTEGER NOT NULL DEFAULT 0,
	native_owner     TEXT NOT NULL DEFAULT '',
	owner            TEXT NOT NULL DEFAULT '',
	owner_generation INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
);
CREATE TABLE questions (
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	request_id       TEXT NOT NULL UNIQUE,
	conversation_id  TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
	incarnation      TEXT NOT NULL,
	ws_path          TEXT NOT NULL,
	ws_dev           INTEGER NOT NULL,
	ws_ino           INTEGER NOT NULL,
	owner            TEXT NOT NULL,
	owner_generation INTEGER NOT NULL,
	kind             TEXT NOT NULL CHECK (kind IN ('text','choice')),
	header           TEXT NOT NULL DEFAULT '',
	prompt           TEXT NOT NULL,
	options          TEXT NOT NULL DEFAULT '[]',
	allow_text       INTEGER NOT NULL DEFAULT 0,
	status           TEXT NOT NULL CHECK (status IN ('pending','answered','cancelled','expired')),
	created_at       INTEGER NOT NULL,
	expires_at       INTEGER NOT NULL,
	resolved_at      INTEGER NOT NULL DEFAULT 0,
	reason           TEXT NOT NULL DEFAULT '',
	receipt_id       TEXT NOT NULL DEFAULT '',
	answer_option_id TEXT NOT NULL DEFAULT '',
	answer_text      TEXT NOT NULL DEFAULT '',
	resolved_by      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX questions_one_pending ON questions(conversation_id) WHERE status = 'pending';
CREATE INDEX questions_by_conversation ON questions(conversation_id, seq);
CREATE TABLE question_runs (
	run_id          TEXT PRIMARY KEY,
	request_id      TEXT NOT NULL UNIQUE REFERENCES questions(request_id) ON DELETE CASCADE,
	state           TEXT NOT NULL CHECK (state IN ('accepted','submitted','finished','failed')),
	error           TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX question_runs_open ON question_runs(state) WHERE state IN ('accepted','submitted');
`, `
-- Birth time tells a re-created directory from the original when the
-- filesystem reuses the inode; 0 (every row bound before this) is unknown.
ALTER TABLE conversations ADD COLUMN ws_btime INTEGER NOT NULL DEFAULT 0;
ALTER TABLE questions ADD COLUMN ws_btime INTEGER NOT NULL DEFAULT 0;
`}

// Defaults for StoreOptions.
const (
	DefaultQuestionTTL  = 24 * time.Hour
	DefaultKeepReceipts = 32
)

// StoreOptions are the Store's dependencies.
type StoreOptions struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Emit appends an event (input_requested, input_resolved). May be nil.
	Emit func(ctx context.Context, kind, conversation string, payload any) error
	// Continue submits the ANSWER-origin continuation turn after an answer
	// was committed. A returned error marks the continuation failed on the
	// receipt; it is never retried automatically. May be nil (continuation
	// stays accepted until FinishRun or the next Recover).
	Continue  func(ctx context.Context, conv, runID string, answer OwnerAnswer) error
	Authority Authority
	// Leases serves conversations.take/release (*auth.Store). May be nil:
	// Take Control is then unavailable.
	Leases      LeaseStore
	QuestionTTL time.Duration
	// KeepReceipts bounds the terminal questions kept per conversation.
	KeepReceipts int
	NewID        func() string
}

// Store holds conversations and their durable owner questions.
type Store struct {
	db   *sql.DB
	clk  clock.Clock
	log  *slog.Logger
	opts StoreOptions

	// identify resolves workspace identities (IdentifyWorkspace); a test
	// replaces it to stand in for a filesystem that reuses inodes.
	identify identifier
	// readOnly stores never end a question on read (see OpenReadOnly).
	readOnly bool

	// afterAnswerWrite is a test seam between the answer write and the run
	// write of one acceptance transaction.
	afterAnswerWrite func() error
	// beforeContinue is a test seam between the committed answer and the
	// start of its continuation.
	beforeContinue func()
}

// OpenStore migrates db (see sqlitedb.Open) and returns a Store on it.
func OpenStore(ctx context.Context, db *sql.DB, o StoreOptions) (*Store, error) {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.QuestionTTL <= 0 {
		o.QuestionTTL = DefaultQuestionTTL
	}
	if o.KeepReceipts <= 0 {
		o.KeepReceipts = DefaultKeepReceipts
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	if err := sqlitedb.Migrate(ctx, db, "questions", migrations); err != nil {
		return nil, fmt.Errorf("questions: %w", err)
	}
	return &Store{db: db, clk: o.Clock, log: o.Logger, opts: o, identify: IdentifyWorkspace}, nil
}

// ErrSchemaOutdated: a read-only open found the database's questions
// schema missing or older than this binary's.
var ErrSchemaOutdated = errors.New("questions: database schema is not current")

// OpenReadOnly returns a Store for reads only, for a CLI with no gateway:
// it never migrates, and snapshot reads report the stored state without
// ending a question that became invalid (ending one must write its
// input_resolved event, which only the gateway does).
func OpenReadOnly(ctx context.Context, db *sql.DB, o StoreOptions) (*Store, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations WHERE component = 'questions'`).Scan(&v)
	if err != nil || int(v.Int64) != len(migrations) {
		return nil, fmt.Errorf("%w (have version %d, want %d; start `raven gateway` once to migrate)", ErrSchemaOutdated, v.Int64, len(migrations))
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	return &Store{db: db, clk: o.Clock, log: o.Logger, opts: o, identify: IdentifyWorkspace, readOnly: true}, nil
}

// effects collects what a transaction must do after it commits.
type effects struct {
	events []pendingEvent
	// keep commits the transaction even though fn returned an error: an
	// invalidation discovered on use is durable even when the call fails.
	keep bool
}

type pendingEvent struct {
	kind, conv string
	payload    any
}

func (e *effects) emit(kind, conv string, payload any) {
	e.events = append(e.events, pendingEvent{kind, conv, payload})
}

// tx runs fn in one immediate (write-locked) transaction, then emits the
// collected events after a successful commit.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx, fx *effects) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("questions: begin: %w", err)
	}
	fx := &effects{}
	ferr := fn(tx, fx)
	if ferr != nil && !fx.keep {
		tx.Rollback()
		return ferr
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("questions: commit: %w", err)
	}
	for _, ev := range fx.events {
		if s.opts.Emit == nil {
			continue
		}
		// The change is committed: its events must go out even if the caller left.
		if err := s.opts.Emit(context.WithoutCancel(ctx), ev.kind, ev.conv, ev.payload); err != nil {
			s.log.Warn("questions: emit event", "kind", ev.kind, "conversation", ev.conv, "err", err)
		}
	}
	return ferr
}

func (s *Store) now() int64 { return s.clk.Now().UnixNano() }

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
