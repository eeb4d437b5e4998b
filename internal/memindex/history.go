package memindex

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// historyChunk is how much of HISTORY.md one read takes; a backfill of a
// long history loops over chunks inside one transaction.
const historyChunk = 1 << 20

// syncHistory indexes the complete lines appended to HISTORY.md since the
// stored offset. HISTORY.md is append-only; a file shorter than the offset
// was replaced (rotated or restored), so its entries are indexed afresh.
func (ix *Index) syncHistory(ctx context.Context, tx *sql.Tx, m marks) error {
	if ix.o.HistoryPath == "" {
		return nil
	}
	f, err := os.Open(ix.o.HistoryPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: history: %w", ErrIndex, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: history: %w", ErrIndex, err)
	}
	off, line, last := m["history_offset"], m["history_line"], m["history_last_at"]
	if st.Size() == off {
		return nil
	}
	if st.Size() < off {
		ix.o.Logger.Info("HISTORY.md shrank; re-indexing it", "path", ix.o.HistoryPath, "size", st.Size(), "indexed", off)
		if _, err := tx.ExecContext(ctx, `DELETE FROM memindex_docs WHERE kind = ?`, KindHistory); err != nil {
			return fmt.Errorf("%w: history reset: %w", ErrIndex, err)
		}
		off, line, last = 0, 0, 0
	}
	buf := make([]byte, min(historyChunk, st.Size()-off+1))
	for off < st.Size() {
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: history read: %w", ErrIndex, err)
		}
		chunk := buf[:n]
		end := bytes.LastIndexByte(chunk, '\n')
		if end < 0 {
			if n < historyChunk {
				break // a line still being written: the next sync takes it
			}
			// A line longer than a chunk (not one AppendHistory writes):
			// its first chunk is skipped, its remainder reads as a line.
			off += int64(n)
			continue
		}
		var docs []doc
		for _, l := range bytes.Split(chunk[:end], []byte("\n")) {
			line++
			if d := parseHistoryLine(string(l), int(line), last); d.body != "" {
				last = d.at
				// The agent writes a machine prompt's role as its origin.
				if !machinePrompts[d.role] {
					docs = append(docs, d)
				}
			}
		}
		if err := insertDocs(ctx, tx, docs); err != nil {
			return err
		}
		off += int64(end + 1)
	}
	m["history_offset"], m["history_line"], m["history_last_at"] = off, line, last
	return nil
}

// parseHistoryLine reads one "- 2026-11-30T09:00:00Z [conversation] role:
// text" entry. A line in another shape (the owner's) is indexed whole,
// dated like the entry before it.
func parseHistoryLine(l string, n int, prev int64) doc {
	d := doc{kind: KindHistory, line: n, at: prev, body: strings.TrimSpace(l)}
	rest, ok := strings.CutPrefix(l, "- ")
	if !ok {
		return d
	}
	ts, rest, ok := strings.Cut(rest, " [")
	if !ok {
		return d
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return d
	}
	conv, rest, ok := strings.Cut(rest, "] ")
	if !ok {
		return d
	}
	role, text, ok := strings.Cut(rest, ": ")
	if !ok {
		return d
	}
	d.at, d.ref, d.role, d.body = at.UnixNano(), conv, role, strings.TrimSpace(text)
	return d
}
