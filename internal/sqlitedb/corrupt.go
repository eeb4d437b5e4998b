package sqlitedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/raven-agent/raven/internal/statefile"
)

// ErrCorrupt is matched by every *CorruptError: raven.db is unusable and
// Raven refuses to start on a fresh one, which would silently drop the
// paired devices' credentials, the sessions and the outbox.
var ErrCorrupt = errors.New("sqlitedb: database is corrupt")

// CorruptError says what was wrong with the database and where it now is.
type CorruptError struct {
	Path   string
	Reason string
	// MovedTo lists where the database and its -wal/-shm went; Earlier is
	// set instead when a previous start already moved it aside.
	MovedTo []string
	Earlier string
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s is unusable", ErrCorrupt, e.Path)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	switch {
	case len(e.MovedTo) > 0:
		fmt.Fprintf(&b, "; moved it to %s", strings.Join(e.MovedTo, ", "))
	case e.Earlier != "":
		fmt.Fprintf(&b, "; it was moved aside to %s by an earlier start", e.Earlier)
	}
	aside := e.Earlier
	if len(e.MovedTo) > 0 {
		aside = e.MovedTo[0]
	}
	if aside != "" {
		fmt.Fprintf(&b, ". Raven will not start on an empty database (paired devices would be lost): restore a backup to %s, "+
			"or delete %s to start over with an empty one", e.Path, aside)
	}
	return b.String()
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// header is the first 16 bytes of every SQLite 3 database file.
var header = []byte("SQLite format 3\x00")

// checkFile inspects the file at path before SQLite touches it, because
// SQLite silently treats a 0-byte file as a new, empty database. It returns
// a reason when the file is corrupt, "" when it is fine or missing.
func checkFile(path string) (reason string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("sqlitedb: stat %s: %w", path, err)
	}
	if st.Size() == 0 {
		// A WAL database may not have been checkpointed yet: its pages
		// are in the -wal file.
		if w, err := os.Stat(path + "-wal"); err == nil && w.Size() > 0 {
			return "", nil
		}
		return "the file is empty (0 bytes) and has no -wal: truncated", nil
	}
	var got [16]byte
	if _, err := io.ReadFull(f, got[:]); err != nil {
		return fmt.Sprintf("the file is %d bytes, too short for a database", st.Size()), nil
	}
	if !bytes.Equal(got[:], header) {
		return "no SQLite header: not a database", nil
	}
	return "", nil
}

// isCorruption reports whether err is SQLite saying the file is damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB), as opposed to busy or I/O trouble.
func isCorruption(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	const corrupt, notADB = 11, 26
	code := se.Code() & 0xff
	return code == corrupt || code == notADB
}

// schemaChanged reports SQLITE_SCHEMA: a peer process changed the schema
// (a migration creating tables) while the statement ran.
func schemaChanged(err error) bool {
	var se *sqlite.Error
	const schema = 17
	return errors.As(err, &se) && se.Code()&0xff == schema
}

// quickCheckTries bounds the re-runs of a check a peer's migration
// interrupted.
const quickCheckTries = 5

// quickCheck runs PRAGMA quick_check and returns a reason when it finds
// damage. A check a peer's schema change interrupted (several processes
// opening a fresh data dir at once, each migrating) runs again: a changed
// schema is not damage.
func quickCheck(ctx context.Context, db *sql.DB) (reason string, err error) {
	var res string
	for try := 1; ; try++ {
		err = db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res)
		if err == nil || !schemaChanged(err) || try == quickCheckTries {
			break
		}
	}
	if err != nil {
		if isCorruption(err) {
			return err.Error(), nil
		}
		return "", err
	}
	if res != "ok" {
		return "quick_check: " + oneLine(res, 240), nil
	}
	return "", nil
}

// oneLine keeps a SQLite report readable in a one-line start-up error.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// asideOf lists the database files moved aside earlier, oldest first.
func asideOf(path string) []string {
	m, _ := filepath.Glob(path + ".corrupt-*")
	m = slices.DeleteFunc(m, func(s string) bool {
		return strings.HasSuffix(s, "-wal") || strings.HasSuffix(s, "-shm")
	})
	slices.Sort(m)
	return m
}

// moveAside renames the database and its -wal and -shm beside it, with one
// timestamp, so the set can be opened (and recovered) together.
func moveAside(path, reason string, now time.Time) error {
	dst := statefile.AsideName(path, now)
	if err := os.Rename(path, dst); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// A peer process moved it first.
			if a := asideOf(path); len(a) > 0 {
				return &CorruptError{Path: path, Reason: reason, Earlier: a[len(a)-1]}
			}
		}
		return fmt.Errorf("%w: %s (%s), and moving it aside failed: %v", ErrCorrupt, path, reason, err)
	}
	moved := []string{dst}
	for _, suf := range []string{"-wal", "-shm"} {
		if err := os.Rename(path+suf, dst+suf); err == nil {
			moved = append(moved, dst+suf)
		}
	}
	return &CorruptError{Path: path, Reason: reason, MovedTo: moved}
}

// Check inspects the database at path without changing anything (for
// `raven doctor`): a *CorruptError when it is damaged or was moved aside
// and not replaced, os.ErrNotExist wrapped when there is none yet.
func Check(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if a := asideOf(path); len(a) > 0 {
			return &CorruptError{Path: path, Earlier: a[len(a)-1]}
		}
		return fmt.Errorf("sqlitedb: %s: %w", path, os.ErrNotExist)
	}
	reason, err := checkFile(path)
	if err != nil {
		return err
	}
	if reason != "" {
		return &CorruptError{Path: path, Reason: reason}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("sqlitedb: open %s: %w", path, err)
	}
	defer db.Close()
	reason, err = quickCheck(ctx, db)
	if err != nil {
		return fmt.Errorf("sqlitedb: check %s: %w", path, err)
	}
	if reason != "" {
		return &CorruptError{Path: path, Reason: reason}
	}
	return nil
}
