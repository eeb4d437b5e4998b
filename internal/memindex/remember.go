package memindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
)

// The bounds and defaults of remember.
const (
	// DefaultSection is the H2 section a fact goes under when none is named.
	DefaultSection = "Notes"
	// MaxFactBytes bounds one fact; a longer one is refused, not cut, so a
	// fact never changes meaning on its way into MEMORY.md.
	MaxFactBytes = 1000
	// MaxSectionBytes bounds a section name.
	MaxSectionBytes = 80
	// DefaultMemoryMaxBytes is the largest MEMORY.md remember rewrites.
	DefaultMemoryMaxBytes = 1 << 20
)

// Errors of remember, matched with errors.Is.
var (
	ErrEmptyFact   = errors.New("memindex: the fact is empty")
	ErrFactTooLong = fmt.Errorf("memindex: the fact is longer than %d bytes; say it shorter", MaxFactBytes)
	ErrBadSection  = fmt.Errorf("memindex: the section name must be one line of at most %d bytes", MaxSectionBytes)
)

// Written is one line Raven wrote to MEMORY.md: what `raven memory log`
// lists.
type Written struct {
	At      time.Time `json:"at"`
	Path    string    `json:"path"`
	Section string    `json:"section"`
	// Text is the line exactly as written.
	Text         string `json:"text"`
	Origin       string `json:"origin"`
	Conversation string `json:"conversation,omitempty"`
	// Already is set when the fact was in the section and nothing was written.
	Already bool `json:"-"`
}

// WriterOptions are a Writer's dependencies.
type WriterOptions struct {
	DB *sql.DB
	// MemoryPath is MEMORY.md.
	MemoryPath string
	// MaxBytes is the largest MEMORY.md rewritten (0: DefaultMemoryMaxBytes).
	MaxBytes int64
	// Index, when set, re-reads MEMORY.md after a write so the fact is
	// searchable at once.
	Index  *Index
	Clock  clock.Clock
	Logger *slog.Logger
}

// Writer appends facts to MEMORY.md and logs each write. The log lives in
// the memory_writes table that Open migrates.
type Writer struct{ o WriterOptions }

// NewWriter returns a Writer; the index tables must exist (Open).
func NewWriter(o WriterOptions) (*Writer, error) {
	if o.DB == nil || o.MemoryPath == "" {
		return nil, fmt.Errorf("%w: a writer needs the database and MEMORY.md's path", ErrIndex)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMemoryMaxBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Writer{o: o}, nil
}

// Fact is one remember request.
type Fact struct {
	Text, Section        string
	Origin, Conversation string
}

// Remember appends f as one dated bullet under its H2 section of MEMORY.md
// (memory.AppendToSectionFile: an insertion, never a rewrite of the owner's
// text) and logs it. A fact already in the section is not written twice.
func (w *Writer) Remember(ctx context.Context, f Fact) (Written, error) {
	text := strings.Join(strings.Fields(f.Text), " ")
	switch {
	case text == "":
		return Written{}, ErrEmptyFact
	case len(text) > MaxFactBytes || !utf8.ValidString(text):
		return Written{}, ErrFactTooLong
	}
	section, err := sectionName(f.Section)
	if err != nil {
		return Written{}, err
	}
	now := w.o.Clock.Now()
	line := memory.Noted("- "+text, now)
	wr := Written{At: now.UTC(), Path: w.o.MemoryPath, Section: section, Text: line, Origin: f.Origin, Conversation: f.Conversation}
	var existing string
	written, err := memory.AppendToSectionFile(ctx, w.o.MemoryPath, section, line, w.o.MaxBytes, func(body string) bool {
		existing = findFact(body, text)
		return existing != ""
	})
	if err != nil {
		return Written{}, fmt.Errorf("remember: %w", err)
	}
	if !written {
		wr.Text, wr.Already = existing, true
		return wr, nil
	}
	if _, err := w.o.DB.ExecContext(context.WithoutCancel(ctx), `INSERT INTO memory_writes (at, path, section, text, origin, conversation)
		VALUES (?, ?, ?, ?, ?, ?)`, now.UnixNano(), wr.Path, section, line, f.Origin, f.Conversation); err != nil {
		// The fact is in MEMORY.md; only the record of writing it is lost.
		w.o.Logger.Error("remember: write not logged", "section", section, "err", err)
	}
	if w.o.Index != nil {
		if err := w.o.Index.SyncNotes(ctx); err != nil {
			w.o.Logger.Warn("remember: MEMORY.md not re-indexed", "err", err)
		}
	}
	return wr, nil
}

// findFact returns the bullet of body that already holds text, dated or not.
func findFact(body, text string) string {
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimRight(l, "\r ")
		if rest, _, _ := memory.CutNoted(l, time.UTC); rest == "- "+text {
			return l
		}
	}
	return ""
}

// sectionName normalises a section name: one line, no leading #s, bounded.
func sectionName(s string) (string, error) {
	if strings.ContainsAny(s, "\r\n") {
		return "", ErrBadSection
	}
	s = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(s), "#")), " ")
	switch {
	case s == "":
		return DefaultSection, nil
	case len(s) > MaxSectionBytes || !utf8.ValidString(s):
		return "", ErrBadSection
	}
	return s, nil
}

// Log returns the last limit writes (0: all), oldest first.
func (w *Writer) Log(ctx context.Context, limit int) ([]Written, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := w.o.DB.QueryContext(ctx, `SELECT at, path, section, text, origin, conversation FROM
		(SELECT * FROM memory_writes ORDER BY id DESC LIMIT ?) ORDER BY id`, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: log: %w", ErrIndex, err)
	}
	defer rows.Close()
	out := []Written{}
	for rows.Next() {
		var wr Written
		var at int64
		if err := rows.Scan(&at, &wr.Path, &wr.Section, &wr.Text, &wr.Origin, &wr.Conversation); err != nil {
			return nil, fmt.Errorf("%w: log: %w", ErrIndex, err)
		}
		wr.At = time.Unix(0, at).UTC()
		out = append(out, wr)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: log: %w", ErrIndex, err)
	}
	return out, nil
}
