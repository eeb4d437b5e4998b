// Package sqlitedb opens Raven's embedded SQLite database (raven.db, WAL mode)
// and applies each component's schema migrations exactly once.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/raven-agent/raven/internal/statefile"
)

// openLockTimeout bounds waiting for a peer process opening the same
// database (its first open writes the header).
const openLockTimeout = 30 * time.Second

// Open opens (creating if needed) the database at path with WAL journaling,
// a busy timeout so concurrent processes wait instead of failing, and foreign keys on.
//
// A damaged database — 0 bytes with no -wal, no SQLite header, or failing
// PRAGMA quick_check — is moved aside to "<path>.corrupt-<UTC time>" (with
// its -wal and -shm) and reported as a *CorruptError (ErrCorrupt). While a
// moved-aside database has not been replaced, Open keeps refusing rather
// than create an empty one: the owner restores a backup or deletes the
// moved file to start over. Only a data dir that never had a database gets
// a fresh one.
func Open(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitedb: mkdir for %s: %w", path, err)
	}
	// Serialise the check with a peer's first open, which creates the file
	// empty and writes its header a moment later.
	lock := statefile.NewLock(path + ".open.lock")
	ctx, cancel := context.WithTimeout(context.Background(), openLockTimeout)
	defer cancel()
	if err := lock.Acquire(ctx); err != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	defer lock.Release()

	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if a := asideOf(path); len(a) > 0 {
			return nil, &CorruptError{Path: path, Earlier: a[len(a)-1]}
		}
	}
	reason, err := checkFile(path)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, moveAside(path, reason, time.Now())
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(ON)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	// Keep connections warm: opening a SQLite connection re-applies every
	// pragma, which dominated control-API latency under concurrent clients.
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if isCorruption(err) {
			return nil, moveAside(path, err.Error(), time.Now())
		}
		return nil, fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	reason, err = quickCheck(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: check %s: %w", path, err)
	}
	if reason != "" {
		db.Close()
		return nil, moveAside(path, reason, time.Now())
	}
	if err := os.Chmod(path, 0o600); err != nil && !os.IsNotExist(err) {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: chmod %s: %w", path, err)
	}
	return db, nil
}

// Migrate applies the migrations of component that have not been applied
// yet, each in its own transaction. migrations[i] is version i+1; append
// only, never edit a released one.
func Migrate(ctx context.Context, db *sql.DB, component string, migrations []string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		component TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (component, version))`); err != nil {
		return fmt.Errorf("sqlitedb: migrate %s: %w", component, err)
	}
	for i, stmt := range migrations {
		version := i + 1
		if err := apply(ctx, db, component, version, stmt); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, component string, version int, stmt string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitedb: migrate %s v%d: %w", component, version, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE component = ? AND version = ?`, component, version).Scan(&n); err != nil {
		return fmt.Errorf("sqlitedb: migrate %s v%d: %w", component, version, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("sqlitedb: migrate %s v%d: %w", component, version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (component, version) VALUES (?, ?)`, component, version); err != nil {
		return fmt.Errorf("sqlitedb: migrate %s v%d: %w", component, version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitedb: migrate %s v%d: %w", component, version, err)
	}
	return nil
}
