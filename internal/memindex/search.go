package memindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Snippet markers around the matched words.
const (
	MarkOpen  = "**"
	MarkClose = "**"
)

// snippetTokens is how many tokens of context a snippet carries.
const snippetTokens = 24

// Query is one search.
type Query struct {
	Text string
	// Since, when set, keeps only entries dated at or after it.
	Since time.Time
	// Limit caps the hits (0: DefaultLimit; at most MaxLimit).
	Limit int
}

// Hit is one found passage and where it came from.
type Hit struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Path is HISTORY.md or the note's path in the workspace; Line its
	// 1-based line.
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	// Conversation and Role are a history entry's or session message's.
	Conversation string  `json:"conversation,omitempty"`
	Role         string  `json:"role,omitempty"`
	Snippet      string  `json:"snippet"`
	Score        float64 `json:"score"`
}

// Source says where h came from, for the model and the owner.
func (h Hit) Source() string {
	switch h.Kind {
	case KindHistory:
		return fmt.Sprintf("HISTORY.md line %d (%s, %s)", h.Line, h.Conversation, h.Role)
	case KindSession:
		return fmt.Sprintf("session %s (%s)", h.Conversation, h.Role)
	default:
		return fmt.Sprintf("%s line %d", h.Path, h.Line)
	}
}

// Search brings the index up to date and returns the best hits for q:
// every word must match (stemmed: "dentists" finds "dentist"); when
// none does, any word may. Ranking is FTS5's bm25 over the newest
// maxCandidates matches, newer first among equals. A passage in both
// HISTORY.md and its session is one hit, the HISTORY.md line.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	terms := Terms(q.Text)
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	q.Limit = min(q.Limit, MaxLimit)
	// A source that cannot be read (a permission, a disk error) leaves the
	// index as it was; what is indexed is still searched.
	if err := ix.Sync(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		ix.o.Logger.Warn("memory index not brought up to date before a search", "err", err)
	}
	hits, err := ix.match(ctx, MatchExpr(terms, "AND"), q)
	if err == nil && len(hits) == 0 && len(terms) > 1 {
		hits, err = ix.match(ctx, MatchExpr(terms, "OR"), q)
	}
	return hits, err
}

// maxCandidates bounds how many matching passages are ranked: bm25 costs
// a few microseconds a row, so a word in thousands of entries would blow
// the latency budget. Past it, the newest matches are the candidates.
const maxCandidates = 300

func (ix *Index) match(ctx context.Context, expr string, q Query) ([]Hit, error) {
	var since int64
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	// FTS5 walks matches in rowid order without scoring them: the floor is
	// the rowid of the maxCandidates-th newest match. It ignores since:
	// rowids follow indexing order, which is nearly date order, so the
	// bound costs a join per match here for little change in the pool.
	var floor int64
	if err := ix.stmts.floor.QueryRowContext(ctx, expr, maxCandidates-1).Scan(&floor); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: search %q: %w", ErrIndex, expr, err)
	}
	// Rank first, without snippets: FTS5 scores the candidates, and
	// equal scores (a reminder repeated daily) go newest first. Over-fetch:
	// the duplicates folded below would otherwise eat the limit.
	var rows *sql.Rows
	var err error
	if since == 0 {
		rows, err = ix.stmts.rank.QueryContext(ctx, expr, floor, 2*q.Limit+4)
	} else {
		rows, err = ix.stmts.rankSince.QueryContext(ctx, expr, floor, since, 2*q.Limit+4)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: search %q: %w", ErrIndex, expr, err)
	}
	var ids []int64
	score := map[int64]float64{}
	for rows.Next() {
		var id int64
		var sc float64
		if err := rows.Scan(&id, &sc); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%w: search: %w", ErrIndex, err)
		}
		ids = append(ids, id)
		score[id] = sc
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: search: %w", ErrIndex, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := ix.describe(ctx, expr, ids)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(ids))
	for _, id := range ids {
		if h, ok := found[id]; ok {
			h.Score = score[id]
			hits = append(hits, h)
		}
	}
	// HISTORY.md and the session store both keep each message of a turn,
	// stamped with the same instant: the HISTORY.md line is the one shown,
	// a file the owner can open at that line.
	key := func(h Hit) string {
		return h.At.Truncate(time.Second).String() + "\x00" + strings.Join(strings.Fields(h.Snippet), " ")
	}
	inHistory := map[string]bool{}
	for _, h := range hits {
		if h.Kind == KindHistory {
			inHistory[key(h)] = true
		}
	}
	var out []Hit
	for _, h := range hits {
		if h.Kind == KindSession && inHistory[key(h)] {
			continue
		}
		out = append(out, h)
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// describe reads where each ranked passage came from, with its snippet.
func (ix *Index) describe(ctx context.Context, expr string, ids []int64) (map[int64]Hit, error) {
	list, _ := json.Marshal(ids)
	lo, hi := slices.Min(ids), slices.Max(ids)
	rows, err := ix.stmts.describe.QueryContext(ctx, MarkOpen, MarkClose, snippetTokens, expr, lo, hi, string(list))
	if err != nil {
		return nil, fmt.Errorf("%w: search: %w", ErrIndex, err)
	}
	defer rows.Close()
	out := make(map[int64]Hit, len(ids))
	for rows.Next() {
		var h Hit
		var id, at int64
		var ref string
		if err := rows.Scan(&id, &h.Kind, &ref, &h.Line, &h.Role, &at, &h.Snippet); err != nil {
			return nil, fmt.Errorf("%w: search: %w", ErrIndex, err)
		}
		h.At = time.Unix(0, at).UTC()
		switch h.Kind {
		case KindNote:
			h.Path = ref
		case KindHistory:
			h.Path, h.Conversation = "HISTORY.md", ref
		default:
			h.Conversation = ref
		}
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: search: %w", ErrIndex, err)
	}
	return out, nil
}

// searchStmts are the search's statements, prepared once: parsing them
// was a fifth of a search's time.
type searchStmts struct{ floor, rank, rankSince, describe *sql.Stmt }

func prepareSearch(ctx context.Context, db *sql.DB) (searchStmts, error) {
	var s searchStmts
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.floor, `SELECT rowid FROM memindex_fts WHERE memindex_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`},
		{&s.rank, `SELECT rowid, rank FROM memindex_fts WHERE memindex_fts MATCH ? AND rowid >= ?
			ORDER BY rank, rowid DESC LIMIT ?`},
		{&s.rankSince, `SELECT f.rowid, f.rank FROM memindex_fts f JOIN memindex_docs d ON d.id = f.rowid
			WHERE f.memindex_fts MATCH ? AND f.rowid >= ? AND d.at >= ?
			ORDER BY f.rank, f.rowid DESC LIMIT ?`},
		// One walk over the ranked rows' rowid range: "+" keeps the IN from
		// driving the FTS table, which would re-open the query per row.
		{&s.describe, `SELECT f.rowid, d.kind, d.ref, d.line, d.role, d.at, snippet(f.memindex_fts, 0, ?, ?, '…', ?)
			FROM memindex_fts f JOIN memindex_docs d ON d.id = f.rowid
			WHERE f.memindex_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND +f.rowid IN (SELECT value FROM json_each(?))`},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return s, fmt.Errorf("%w: prepare search: %w", ErrIndex, err)
		}
		*p.dst = st
	}
	return s, nil
}
