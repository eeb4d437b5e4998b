package e2e

import (
	"context"

	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// Outbox opens the data dir's outbox (raven.db, beside any running
// process); the cleanup closes it. Tests use it to assert what waits for
// the owner, or to queue an item as a producer would.
func (e *Env) Outbox() *outbox.Store {
	e.T.Helper()
	db, err := sqlitedb.Open(e.Path("raven.db"))
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { db.Close() })
	st, err := outbox.Open(context.Background(), db, outbox.Options{})
	if err != nil {
		e.T.Fatal(err)
	}
	return st
}
