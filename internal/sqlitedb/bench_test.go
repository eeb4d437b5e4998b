package sqlitedb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkOpen10MB is the start-up cost of the header check, the pragmas
// and PRAGMA quick_check on a 10 MB database.
func BenchmarkOpen10MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raven.db")
	db, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := Migrate(ctx, db, "b", []string{`CREATE TABLE m (id INTEGER PRIMARY KEY, body TEXT)`, `CREATE INDEX m_body ON m (body)`}); err != nil {
		b.Fatal(err)
	}
	tx, _ := db.Begin()
	for i := 0; i < 20000; i++ {
		tx.Exec(`INSERT INTO m (body) VALUES (?)`, strings.Repeat("x", 200)+string(rune('a'+i%26)))
	}
	tx.Commit()
	db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	db.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		db, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
