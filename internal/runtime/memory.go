package runtime

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/memindex"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// OpenMemory opens the memory index over a data dir's HISTORY.md, session
// messages and workspace notes, and the MEMORY.md writer: Build and the
// `raven memory` commands open it the same way.
func OpenMemory(ctx context.Context, p config.Paths, db *sql.DB, sessions *session.Store, clk clock.Clock, log *slog.Logger) (*memindex.Index, *memindex.Writer, error) {
	ix, err := memindex.Open(ctx, memindex.Options{DB: db, HistoryPath: p.History(), Workspace: p.Workspace(), Sessions: sessions,
		Logger: log})
	if err != nil {
		return nil, nil, err
	}
	w, err := memindex.NewWriter(memindex.WriterOptions{DB: db, MemoryPath: p.Memory(), Index: ix, Clock: clk, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return ix, w, nil
}

// buildMemory opens the index, registers memory_search and remember, and
// indexes each turn's new history lines and messages once it is done.
func (r *Runtime) buildMemory(ctx context.Context, _ Options) error {
	log := r.log.With("component", "memory")
	ix, w, err := OpenMemory(ctx, r.paths, r.db, r.sessions, r.clk, log)
	if err != nil {
		return err
	}
	r.memIndex, r.memWriter = ix, w
	search, err := memindex.SearchTool(ix, r.clk)
	if err != nil {
		return err
	}
	remember, err := memindex.RememberTool(w)
	if err != nil {
		return err
	}
	r.toolReg.Register(search)
	r.toolReg.Register(remember)
	r.observeTurns(nil, func(spine.TurnRequest, spine.Result) {
		if err := ix.SyncTurn(r.ctx); err != nil {
			log.Warn("memory index not updated after the turn; the next search catches up", "err", err)
		}
	})
	return nil
}

// MemoryIndex is the full-text index memory_search reads.
func (r *Runtime) MemoryIndex() *memindex.Index { return r.memIndex }

// MemoryWriter appends remembered facts to MEMORY.md and keeps their log.
func (r *Runtime) MemoryWriter() *memindex.Writer { return r.memWriter }
