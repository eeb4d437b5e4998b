package sqlitedb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validDB creates a database with some rows and returns its path.
func validDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raven.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := Migrate(ctx, db, "t", []string{`CREATE TABLE devices (id INTEGER PRIMARY KEY, secret TEXT)`}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO devices (secret) VALUES (?)`, strings.Repeat("s", 100)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	return path
}

func TestCorruptDatabaseIsMovedAsideNotRecreated(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		reason string
	}{
		{"zero bytes", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, "0 bytes"},
		{"garbage", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("this is not a database, it is a shopping list\n"), 0o600)
		}, "no SQLite header"},
		{"too short", func(t *testing.T, path string) { os.WriteFile(path, []byte("SQLite"), 0o600) }, "too short"},
		{"damaged pages behind a good header", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 4096))
			f.WriteAt(junk, 4096) // pages 2..5: the table's b-tree
			f.Close()
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := validDB(t)
			// A stray -shm/-wal pair must travel with the database.
			os.WriteFile(path+"-shm", []byte("shm"), 0o600)
			tt.damage(t, path)
			before, _ := os.ReadFile(path)
			db, err := Open(path)
			if err == nil {
				db.Close()
				t.Fatal("Open accepted a corrupt raven.db")
			}
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || len(ce.MovedTo) == 0 {
				t.Fatalf("err = %v, want a *CorruptError with MovedTo", err)
			}
			if !strings.Contains(ce.Reason, tt.reason) || !strings.Contains(err.Error(), ce.MovedTo[0]) || !strings.Contains(err.Error(), "restore") {
				t.Fatalf("message %q (reason %q) does not say what was moved where and what to do", err, ce.Reason)
			}
			aside := asideOf(path)
			if len(aside) != 1 || aside[0] != ce.MovedTo[0] {
				t.Fatalf("moved aside: %v, error says %v", aside, ce.MovedTo)
			}
			if got, _ := os.ReadFile(aside[0]); string(got) != string(before) {
				t.Fatal("moved-aside bytes differ from the original")
			}
			t.Logf("reason: %s", ce.Reason)
			// SQLite never opened a file that fails the header check, so the
			// stray -shm is still there to travel with it.
			if _, err := os.Stat(aside[0] + "-shm"); tt.reason != "" && err != nil {
				t.Fatalf("-shm not moved with it: %v", err)
			}
			// A second start refuses too: no silent fresh database.
			db, err = Open(path)
			if err == nil {
				db.Close()
				t.Fatal("second Open created a fresh database over the moved-aside one")
			}
			if !errors.As(err, &ce) || ce.Earlier != aside[0] {
				t.Fatalf("second Open: %v", err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("raven.db recreated: %v", err)
			}
			if err := Check(context.Background(), path); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check after move: %v", err)
			}
			// The owner deletes the moved file: a fresh database is made.
			for _, f := range []string{aside[0], aside[0] + "-shm", aside[0] + "-wal"} {
				os.Remove(f)
			}
			db, err = Open(path)
			if err != nil {
				t.Fatalf("after the owner removed the moved file: %v", err)
			}
			db.Close()
		})
	}
}

func TestCheckDoesNotTouchAndPassesAGoodDatabase(t *testing.T) {
	path := validDB(t)
	if err := Check(context.Background(), path); err != nil {
		t.Fatalf("good database: %v", err)
	}
	os.WriteFile(path, nil, 0o600)
	if err := Check(context.Background(), path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty database: %v", err)
	}
	if _, err := os.Stat(path); err != nil || len(asideOf(path)) != 0 {
		t.Fatalf("Check moved something: %v %v", err, asideOf(path))
	}
	missing := filepath.Join(t.TempDir(), "raven.db")
	if err := Check(context.Background(), missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	db, err := Open(path + "2")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Reopening a good database keeps its rows.
	db, err = Open(validDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM devices`).Scan(&n); err != nil || n != 2000 {
		t.Fatalf("rows %d %v", n, err)
	}
}
