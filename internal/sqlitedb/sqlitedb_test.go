package sqlitedb

import (
	"context"
	"path/filepath"
	"testing"
)

func TestMigrateAppliesOnceInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "raven.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migs := []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`,
		`ALTER TABLE t ADD COLUMN w TEXT`,
	}
	for i := 0; i < 2; i++ { // a second run must be a no-op, not "table exists"
		if err := Migrate(ctx, db, "test", migs); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (v, w) VALUES ('a', 'b')`); err != nil {
		t.Fatalf("schema not applied: %v", err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := Migrate(ctx, db, "bad", []string{`NOT SQL`}); err == nil {
		t.Fatal("bad migration: want error")
	}
}
