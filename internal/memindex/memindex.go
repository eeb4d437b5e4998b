// Package memindex is Raven's searchable memory: a SQLite FTS5 index in raven.db over
// HISTORY.md, session messages and workspace notes, and the log of what Raven wrote to MEMORY.md.
package memindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"

	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// The defaults Open applies to zero Options fields.
const (
	// DefaultMaxNoteBytes is the largest workspace note indexed; a bigger
	// file is skipped (and logged), never read in part.
	DefaultMaxNoteBytes = 256 << 10
	// DefaultMaxNotes bounds how many note files one sync looks at.
	DefaultMaxNotes = 2000
	// DefaultLimit and MaxLimit bound the hits of one search.
	DefaultLimit = 8
	MaxLimit     = 50
)

// Kinds of indexed document.
const (
	KindHistory = "history"
	KindSession = "session"
	KindNote    = "note"
)

// ErrIndex is matched by every failure to read or update the index.
var ErrIndex = errors.New("memindex")

var migrations = []string{
	// docs holds the text (external content of the FTS table, so snippet()
	// can read it) with what a hit must say about where it came from.
	`CREATE TABLE memindex_docs (
		id INTEGER PRIMARY KEY,
		kind TEXT NOT NULL,
		ref TEXT NOT NULL,
		line INTEGER NOT NULL DEFAULT 0,
		role TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL,
		body TEXT NOT NULL
	);
	CREATE INDEX memindex_notes_ref ON memindex_docs (ref) WHERE kind = 'note';
	CREATE VIRTUAL TABLE memindex_fts USING fts5(body, content='memindex_docs', content_rowid='id',
		tokenize='porter unicode61 remove_diacritics 2');
	CREATE TRIGGER memindex_docs_ai AFTER INSERT ON memindex_docs BEGIN
		INSERT INTO memindex_fts (rowid, body) VALUES (new.id, new.body);
	END;
	CREATE TRIGGER memindex_docs_ad AFTER DELETE ON memindex_docs BEGIN
		INSERT INTO memindex_fts (memindex_fts, rowid, body) VALUES ('delete', old.id, old.body);
	END;
	CREATE TABLE memindex_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
	CREATE TABLE memindex_files (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL, size INTEGER NOT NULL);
	CREATE TABLE memory_writes (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		at INTEGER NOT NULL,
		path TEXT NOT NULL,
		section TEXT NOT NULL,
		text TEXT NOT NULL,
		origin TEXT NOT NULL,
		conversation TEXT NOT NULL
	);`,
}

// SessionSource pages through stored messages by id (session.Store).
type SessionSource interface {
	After(ctx context.Context, id int64, limit int) ([]session.Record, error)
}

// Options are the index's sources.
type Options struct {
	DB *sql.DB
	// HistoryPath is HISTORY.md ("": not indexed).
	HistoryPath string
	// Workspace is the directory whose *.md notes are indexed ("": none).
	Workspace string
	// Sessions is the session store (nil: not indexed).
	Sessions     SessionSource
	MaxNoteBytes int64
	MaxNotes     int
	Logger       *slog.Logger
}

// Index is the full-text index. Its methods are safe for concurrent use,
// and several processes may share one database: each update runs in one
// write transaction that reads and advances the stored watermarks.
type Index struct {
	o     Options
	stmts searchStmts
	// mu keeps this process's syncs from queueing on SQLite's busy wait,
	// and guards what the last sync saw.
	mu sync.Mutex
	// seen is what this process's last sync saw of the sources. When they
	// look the same, a sync takes no write transaction: a search does not
	// queue behind a gateway's writes to find that nothing is new.
	seen struct {
		history   fileStamp
		sessionID int64
		notes     []noteFile
	}
}

// fileStamp is a file's size and mtime; the zero value is a missing file.
type fileStamp struct{ size, mtime int64 }

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{st.Size(), st.ModTime().UnixNano()}
}

// Open migrates the index tables in o.DB.
func Open(ctx context.Context, o Options) (*Index, error) {
	if o.DB == nil {
		return nil, fmt.Errorf("%w: no database", ErrIndex)
	}
	if o.MaxNoteBytes <= 0 {
		o.MaxNoteBytes = DefaultMaxNoteBytes
	}
	if o.MaxNotes <= 0 {
		o.MaxNotes = DefaultMaxNotes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := sqlitedb.Migrate(ctx, o.DB, "memindex", migrations); err != nil {
		return nil, err
	}
	stmts, err := prepareSearch(ctx, o.DB)
	if err != nil {
		return nil, err
	}
	return &Index{o: o, stmts: stmts}, nil
}

// Sync brings the index up to date with every source: the turn sources
// (new HISTORY.md lines, new session messages) and the notes (files whose
// mtime or size changed). Search calls it first.
func (ix *Index) Sync(ctx context.Context) error {
	return errors.Join(ix.SyncTurn(ctx), ix.SyncNotes(ctx))
}

// SyncTurn indexes what a turn appends: the HISTORY.md lines and session
// messages written since the last sync. It reads only what is new.
func (ix *Index) SyncTurn(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	hist := fileStamp{}
	if ix.o.HistoryPath != "" {
		hist = stampOf(ix.o.HistoryPath)
	}
	if hist == ix.seen.history && !ix.newSessions(ctx) {
		return nil
	}
	var sessionID int64
	err := ix.inTx(ctx, func(tx *sql.Tx) error {
		was, err := loadMarks(ctx, tx)
		if err != nil {
			return err
		}
		m := maps.Clone(was)
		if err := ix.syncHistory(ctx, tx, m); err != nil {
			return err
		}
		if err := ix.syncSessions(ctx, tx, m); err != nil {
			return err
		}
		sessionID = m["session_id"]
		return m.save(ctx, tx, was)
	})
	if err == nil {
		ix.seen.history, ix.seen.sessionID = hist, sessionID
	}
	return err
}

// newSessions reports whether a message may have been stored since the
// last sync (true on any doubt).
func (ix *Index) newSessions(ctx context.Context) bool {
	if ix.o.Sessions == nil {
		return false
	}
	recs, err := ix.o.Sessions.After(ctx, ix.seen.sessionID, 1)
	return err != nil || len(recs) > 0
}

func (ix *Index) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := ix.o.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", ErrIndex, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%w: commit: %w", ErrIndex, err)
	}
	return nil
}

// marks are the stored watermarks (HISTORY.md offset, line and last date;
// last session id), read once per update and written back when changed.
type marks map[string]int64

func loadMarks(ctx context.Context, tx *sql.Tx) (marks, error) {
	rows, err := tx.QueryContext(ctx, `SELECT key, value FROM memindex_state`)
	if err != nil {
		return nil, fmt.Errorf("%w: state: %w", ErrIndex, err)
	}
	defer rows.Close()
	m := marks{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("%w: state: %w", ErrIndex, err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: state: %w", ErrIndex, err)
	}
	return m, nil
}

// save writes the marks that differ from was, in one statement.
func (m marks) save(ctx context.Context, tx *sql.Tx, was marks) error {
	var vals []string
	var args []any
	for k, v := range m {
		if old, ok := was[k]; ok && old == v {
			continue
		}
		vals = append(vals, "(?, ?)")
		args = append(args, k, v)
	}
	if len(vals) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO memindex_state (key, value) VALUES `+strings.Join(vals, ", ")+`
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, args...); err != nil {
		return fmt.Errorf("%w: state: %w", ErrIndex, err)
	}
	return nil
}

// machinePrompts are the origins whose turn prompts Raven writes itself
// (the heartbeat's and the Sentinel's instructions, a subagent's task):
// boilerplate that would crowd the owner's own words out of the results.
// Their replies are indexed.
var machinePrompts = map[string]bool{string(spine.OriginHeartbeat): true, string(spine.OriginSentinel): true, string(spine.OriginSubagent): true}

// doc is one row to index.
type doc struct {
	kind, ref, role, body string
	line                  int
	at                    int64
}

func insertDocs(ctx context.Context, tx *sql.Tx, docs []doc) error {
	if len(docs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO memindex_docs (kind, ref, line, role, at, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("%w: insert: %w", ErrIndex, err)
	}
	defer stmt.Close()
	for _, d := range docs {
		if _, err := stmt.ExecContext(ctx, d.kind, d.ref, d.line, d.role, d.at, d.body); err != nil {
			return fmt.Errorf("%w: insert %s %s: %w", ErrIndex, d.kind, d.ref, err)
		}
	}
	return nil
}
