package memindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/raven-agent/raven/internal/memory"
)

// maxChunkBytes bounds one indexed piece of a note: a hit points at a
// section (or part of a long one), not at a whole file.
const maxChunkBytes = 2 << 10

// maxWalkEntries bounds the directory entries one notes scan visits, so a
// workspace holding a large checkout does not make every search slow.
const maxWalkEntries = 20000

// skippedNotes are workspace paths that are not the owner's notes:
// HISTORY.md (indexed entry by entry), the heartbeat task list, files the
// Sentinel regenerates, and skills (instructions, not memory).
var skippedNotes = map[string]bool{"memory": true, "HEARTBEAT.md": true, "user_memory": true, "skills": true}

type noteFile struct {
	rel         string
	mtime, size int64
}

// SyncNotes re-indexes the workspace's *.md files whose mtime or size
// changed since the last sync, and drops the ones removed. MEMORY.md is
// one of them: what the prompt budget leaves out is found here.
func (ix *Index) SyncNotes(ctx context.Context) error {
	if ix.o.Workspace == "" {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	found, err := ix.walkNotes()
	if err != nil {
		return err
	}
	if ix.seen.notes != nil && slices.Equal(found, ix.seen.notes) {
		return nil
	}
	err = ix.inTx(ctx, func(tx *sql.Tx) error {
		known := map[string]noteFile{}
		rows, err := tx.QueryContext(ctx, `SELECT path, mtime, size FROM memindex_files`)
		if err != nil {
			return fmt.Errorf("%w: notes: %w", ErrIndex, err)
		}
		for rows.Next() {
			var n noteFile
			if err := rows.Scan(&n.rel, &n.mtime, &n.size); err != nil {
				rows.Close()
				return fmt.Errorf("%w: notes: %w", ErrIndex, err)
			}
			known[n.rel] = n
		}
		rows.Close()
		for _, n := range found {
			if k, ok := known[n.rel]; ok && k == n {
				delete(known, n.rel)
				continue
			}
			delete(known, n.rel)
			if err := ix.indexNote(ctx, tx, n); err != nil {
				return err
			}
		}
		for rel := range known {
			if err := dropNote(ctx, tx, rel); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		ix.seen.notes = append(make([]noteFile, 0, len(found)), found...)
	}
	return err
}

// walkNotes lists the workspace's notes without following symlinks or
// entering hidden directories, up to MaxNotes files.
func (ix *Index) walkNotes() ([]noteFile, error) {
	var out []noteFile
	root := ix.o.Workspace
	visited := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if visited++; visited > maxWalkEntries {
			ix.o.Logger.Warn("memory index: workspace too large to scan whole; later notes are not indexed", "entries", maxWalkEntries)
			return fs.SkipAll
		}
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			ix.o.Logger.Debug("memory index: skipping unreadable path", "path", p, "err", err)
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if p != root && (strings.HasPrefix(d.Name(), ".") || skippedNotes[filepath.ToSlash(rel)] || d.IsDir() && d.Name() == "node_modules") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.EqualFold(filepath.Ext(p), ".md") {
			return nil
		}
		info, err := d.Info()
		// Symlinks are not followed, except MEMORY.md's: an owner may keep
		// it in a notes vault and link it in.
		if err == nil && d.Type()&fs.ModeSymlink != 0 && rel == "MEMORY.md" {
			info, err = os.Stat(p)
		}
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if info.Size() > ix.o.MaxNoteBytes {
			ix.o.Logger.Debug("memory index: note too large to index", "path", p, "size", info.Size(), "limit", ix.o.MaxNoteBytes)
			return nil
		}
		if len(out) >= ix.o.MaxNotes {
			ix.o.Logger.Warn("memory index: too many notes; the rest are not indexed", "limit", ix.o.MaxNotes)
			return fs.SkipAll
		}
		out = append(out, noteFile{rel: filepath.ToSlash(rel), mtime: info.ModTime().UnixNano(), size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: notes: %w", ErrIndex, err)
	}
	return out, nil
}

func (ix *Index) indexNote(ctx context.Context, tx *sql.Tx, n noteFile) error {
	if err := dropNote(ctx, tx, n.rel); err != nil {
		return err
	}
	text, err := memory.ReadBounded(filepath.Join(ix.o.Workspace, filepath.FromSlash(n.rel)), ix.o.MaxNoteBytes)
	if err != nil {
		ix.o.Logger.Debug("memory index: note unreadable", "path", n.rel, "err", err)
		return nil
	}
	var docs []doc
	for _, c := range chunkNote(text) {
		docs = append(docs, doc{kind: KindNote, ref: n.rel, line: c.line, at: n.mtime, body: c.text})
	}
	if err := insertDocs(ctx, tx, docs); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO memindex_files (path, mtime, size) VALUES (?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET mtime = excluded.mtime, size = excluded.size`, n.rel, n.mtime, n.size); err != nil {
		return fmt.Errorf("%w: note %s: %w", ErrIndex, n.rel, err)
	}
	return nil
}

func dropNote(ctx context.Context, tx *sql.Tx, rel string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM memindex_docs WHERE kind = 'note' AND ref = ?`, rel); err != nil {
		return fmt.Errorf("%w: note %s: %w", ErrIndex, rel, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memindex_files WHERE path = ?`, rel); err != nil {
		return fmt.Errorf("%w: note %s: %w", ErrIndex, rel, err)
	}
	return nil
}

type chunk struct {
	line int
	text string
}

// chunkNote splits markdown at its headings, and a long section at line
// boundaries, so each piece is at most about maxChunkBytes.
func chunkNote(text string) []chunk {
	var out []chunk
	var b strings.Builder
	start := 1
	flush := func(next int) {
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, chunk{line: start, text: s})
		}
		b.Reset()
		start = next
	}
	for i, l := range strings.SplitAfter(text, "\n") {
		n := i + 1
		if strings.HasPrefix(l, "#") || b.Len()+len(l) > maxChunkBytes {
			flush(n)
		}
		b.WriteString(l)
	}
	flush(0)
	return out
}
