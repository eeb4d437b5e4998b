package memindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

type fixture struct {
	ix       *Index
	sessions *session.Store
	ws, hist string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	ss, err := session.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "workspace")
	hist := filepath.Join(ws, "memory", "HISTORY.md")
	ix, err := Open(ctx, Options{DB: db, HistoryPath: hist, Workspace: ws, Sessions: ss})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ix: ix, sessions: ss, ws: ws, hist: hist}
}

func (f *fixture) history(t testing.TB, at time.Time, role, text string) {
	t.Helper()
	if err := memory.AppendHistory(f.hist, at, "cli:local", role, text); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) search(t *testing.T, q Query) []Hit {
	t.Helper()
	hits, err := f.ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %q: %v", q.Text, err)
	}
	return hits
}

func TestTermsAndMatchExpr(t *testing.T) {
	cases := []struct{ q, and string }{
		{"dentist", `"dentist"`},
		{"Ana's birthday", `"Ana" AND "s" AND "birthday"`},
		{`"unbalanced`, `"unbalanced"`},
		{"tax AND NOT OR NEAR(x y)", `"tax" AND "AND" AND "NOT" AND "OR" AND "NEAR" AND "x" AND "y"`},
		{"body:secret -minus +plus ^start col*", `"body" AND "secret" AND "minus" AND "plus" AND "start" AND "col"`},
		{"c++ 日本語 café", `"c" AND "日本語" AND "café"`},
		{"'); DROP TABLE memindex_docs; --", `"DROP" AND "TABLE" AND "memindex" AND "docs"`},
	}
	for _, c := range cases {
		if got := MatchExpr(Terms(c.q), "AND"); got != c.and {
			t.Errorf("%q: got %s want %s", c.q, got, c.and)
		}
	}
	if n := len(Terms(strings.Repeat("word ", 100))); n != MaxQueryTerms {
		t.Errorf("terms not bounded: %d", n)
	}
}

// No query, however hostile, is an FTS5 syntax error: each either finds
// what it names or nothing.
func TestSearchHostileQueries(t *testing.T) {
	f := newFixture(t)
	f.history(t, t0, "user", `my "quoted" note about NEAR(tax) AND c++ and body:col`)
	hostile := []string{`"`, `""""`, `"tax`, `tax"`, `(`, `)`, `*`, `tax*`, `^tax`, `-tax`, `NOT`, `AND OR`, `NEAR(`, `body:tax`,
		`{body}: tax`, `tax AND`, `OR tax`, `'`, `\`, `%`, `_`, `tax; DROP TABLE memindex_fts`, "\x00tax", `c++`, `:`, `"quoted"`}
	for _, q := range hostile {
		hits, err := f.ix.Search(context.Background(), Query{Text: q})
		if errors.Is(err, ErrEmptyQuery) {
			continue
		}
		if err != nil {
			t.Errorf("query %q: %v", q, err)
			continue
		}
		if len(hits) > 1 {
			t.Errorf("query %q: %d hits", q, len(hits))
		}
	}
	for _, q := range []string{`"quoted"`, `NEAR(tax)`, `c++`, `body:col`} {
		if hits := f.search(t, Query{Text: q}); len(hits) != 1 {
			t.Errorf("query %q did not find the note: %v", q, hits)
		}
	}
	if _, err := f.ix.Search(context.Background(), Query{Text: `"()*:^`}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("punctuation only: %v", err)
	}
}

func TestSearchSinceAndLimit(t *testing.T) {
	f := newFixture(t)
	for d := range 10 {
		f.history(t, t0.AddDate(0, 0, d), "user", "walked the dog in the park")
	}
	cases := []struct {
		since time.Time
		limit int
		want  int
		first time.Time
	}{
		{time.Time{}, 0, DefaultLimit, t0.AddDate(0, 0, 9)},
		{time.Time{}, 3, 3, t0.AddDate(0, 0, 9)},
		{t0.AddDate(0, 0, 7), 0, 3, t0.AddDate(0, 0, 9)},
		{t0.AddDate(0, 0, 9), 0, 1, t0.AddDate(0, 0, 9)},
		{t0.AddDate(0, 0, 10), 0, 0, time.Time{}},
		{time.Time{}, 1000, 10, t0.AddDate(0, 0, 9)},
	}
	for _, c := range cases {
		hits := f.search(t, Query{Text: "dog park", Since: c.since, Limit: c.limit})
		if len(hits) != c.want {
			t.Errorf("since %v limit %d: %d hits, want %d", c.since, c.limit, len(hits), c.want)
			continue
		}
		for _, h := range hits {
			if h.At.Before(c.since) {
				t.Errorf("since %v: hit at %v", c.since, h.At)
			}
		}
		if c.want > 0 && !hits[0].At.Equal(c.first) {
			t.Errorf("since %v: newest first among equal scores: first %v", c.since, hits[0].At)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), false},
		{"2026-11-30T08:00:00+01:00", time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), false},
		{"36h", now.Add(-36 * time.Hour), false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"2w", now.AddDate(0, 0, -14), false},
		{"yesterday", time.Time{}, true},
		{"-3d", time.Time{}, true},
		{"-1h", time.Time{}, true},
	}
	for _, c := range cases {
		got, err := ParseSince(c.in, now)
		if c.err != (err != nil) || (err == nil && !got.Equal(c.want)) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrBadSince) {
			t.Errorf("%q: %v is not ErrBadSince", c.in, err)
		}
	}
}

// bm25: the passage naming more of the query's words, and naming them more
// densely, ranks first whatever its age.
func TestSearchRanking(t *testing.T) {
	f := newFixture(t)
	f.history(t, t0.Add(3*time.Hour), "user", "the weather was nice and we talked about many things, the dentist among them, and lunch, and the car")
	f.history(t, t0, "user", "dentist appointment moved to thursday")
	f.history(t, t0.Add(2*time.Hour), "assistant", "booked the dentist appointment")
	f.history(t, t0.Add(time.Hour), "user", "unrelated")
	hits := f.search(t, Query{Text: "dentist appointment thursday"})
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "**thursday**") {
		t.Fatalf("AND of three words: %+v", hits)
	}
	hits = f.search(t, Query{Text: "dentist"})
	if len(hits) != 3 || !strings.Contains(hits[2].Snippet, "weather") {
		t.Fatalf("denser passages first: %+v", hits)
	}
	// No passage has every word: any word will do, best first.
	hits = f.search(t, Query{Text: "dentist unrelated"})
	if len(hits) != 4 {
		t.Fatalf("OR fallback: %+v", hits)
	}
}

// Each source says where it came from, and a message both in HISTORY.md
// and in its session is one hit.
func TestSearchSourcesAndDuplicates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.history(t, t0, "user", "the plumber comes on friday")
	if err := f.sessions.Append(ctx,
		session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "the plumber comes on friday"}, Conversation: "cli:local", Channel: "cli", ChatID: "local", Origin: "user", At: t0},
		session.Entry{Message: llm.Message{Role: llm.RoleAssistant, Content: "Noted: plumber friday."}, Conversation: "telegram:7", Channel: "telegram", ChatID: "7", Origin: "user", At: t0.Add(time.Minute)},
		session.Entry{Message: llm.Message{Role: llm.RoleTool, Content: "plumber tool output"}, Conversation: "cli:local", Channel: "cli", ChatID: "local", Origin: "user", At: t0},
	); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.ws, "notes"), 0o700)
	os.WriteFile(filepath.Join(f.ws, "notes", "house.md"), []byte("# House\n\n## Contacts\nplumber: Jo, 555-0100\n"), 0o600)
	os.WriteFile(filepath.Join(f.ws, "HEARTBEAT.md"), []byte("- check the plumber\n"), 0o600)
	os.MkdirAll(filepath.Join(f.ws, ".git"), 0o700)
	os.WriteFile(filepath.Join(f.ws, ".git", "x.md"), []byte("plumber"), 0o600)
	hits := f.search(t, Query{Text: "plumber"})
	got := map[string]bool{}
	for _, h := range hits {
		got[h.Source()] = true
	}
	want := []string{"HISTORY.md line 1 (cli:local, user)", "session telegram:7 (assistant)", "notes/house.md line 3"}
	if len(hits) != len(want) {
		t.Fatalf("hits (the message in both HISTORY.md and its session once, as its HISTORY.md line): %+v", hits)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no hit from %s in %v", w, got)
		}
	}
}

// Updates are incremental: a new history line, a new message and a changed
// note are found; a removed note and a replaced history file are forgotten.
func TestSyncIncremental(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	note := filepath.Join(f.ws, "ideas.md")
	os.MkdirAll(f.ws, 0o700)
	os.WriteFile(note, []byte("## Ideas\nbuild a kayak\n"), 0o600)
	f.history(t, t0, "user", "first entry about kayaks")
	if n := len(f.search(t, Query{Text: "kayak"})); n != 2 {
		t.Fatalf("first sync: %d hits", n)
	}
	// A partial line (a writer mid-append) waits for its newline.
	fh, _ := os.OpenFile(f.hist, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString("- 2026-11-02T09:00:00Z [cli:local] user: half a kayak")
	if n := len(f.search(t, Query{Text: "half"})); n != 0 {
		t.Fatalf("partial line indexed: %d", n)
	}
	fh.WriteString(" line\n")
	fh.Close()
	if hits := f.search(t, Query{Text: "half"}); len(hits) != 1 || hits[0].Line != 2 || !hits[0].At.Equal(t0.AddDate(0, 0, 1)) {
		t.Fatalf("completed line: %+v", hits)
	}
	os.WriteFile(note, []byte("## Ideas\nbuild a canoe instead\n"), 0o600)
	os.Chtimes(note, t0, t0.Add(time.Hour))
	if n := len(f.search(t, Query{Text: "canoe"})); n != 1 {
		t.Fatalf("changed note: %d", n)
	}
	if n := len(f.search(t, Query{Text: "build"})); n != 1 {
		t.Fatalf("old note text still indexed: %d", n)
	}
	os.Remove(note)
	if n := len(f.search(t, Query{Text: "canoe"})); n != 0 {
		t.Fatalf("removed note: %d", n)
	}
	os.WriteFile(f.hist, []byte("- 2026-11-03T09:00:00Z [cli:local] user: rotated\n"), 0o600)
	if n := len(f.search(t, Query{Text: "kayak"})); n != 0 {
		t.Fatalf("replaced history still indexed: %d", n)
	}
	if n := len(f.search(t, Query{Text: "rotated"})); n != 1 {
		t.Fatalf("replaced history not indexed: %d", n)
	}
	var docs int
	f.ix.o.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM memindex_docs`).Scan(&docs)
	if docs != 1 {
		t.Fatalf("%d docs left, want 1", docs)
	}
}

// A note over the size limit is skipped, not read in part.
func TestNotesBounded(t *testing.T) {
	f := newFixture(t)
	f.ix.o.MaxNoteBytes = 100
	os.MkdirAll(f.ws, 0o700)
	os.WriteFile(filepath.Join(f.ws, "big.md"), []byte("zebra "+strings.Repeat("x ", 100)), 0o600)
	os.WriteFile(filepath.Join(f.ws, "small.md"), []byte("zebra"), 0o600)
	if hits := f.search(t, Query{Text: "zebra"}); len(hits) != 1 || hits[0].Path != "small.md" {
		t.Fatalf("hits %+v", hits)
	}
}

// Raven's own prompts (heartbeat, Sentinel, subagent tasks) are not the
// owner's words: they are left out; the replies to them are kept.
func TestMachinePromptsNotIndexed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.history(t, t0, "heartbeat", "Read HEARTBEAT.md and check the garden tasks")
	f.history(t, t0, "assistant", "The garden needs watering.")
	f.history(t, t0, "cron", "garden reminder: water the roses")
	if err := f.sessions.Append(ctx,
		session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "Sentinel: consider the garden"}, Conversation: "sentinel:x", Channel: "sentinel", Origin: "sentinel", At: t0.Add(time.Hour)},
		session.Entry{Message: llm.Message{Role: llm.RoleAssistant, Content: "Garden nudge sent"}, Conversation: "sentinel:x", Channel: "sentinel", Origin: "sentinel", At: t0.Add(time.Hour)},
	); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range f.search(t, Query{Text: "garden"}) {
		got = append(got, h.Role+": "+strings.ReplaceAll(h.Snippet, "**", ""))
	}
	want := map[string]bool{"assistant: The garden needs watering.": true, "cron: garden reminder: water the roses": true, "assistant: Garden nudge sent": true}
	if len(got) != len(want) {
		t.Fatalf("hits %q", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("unexpected hit %q in %q", g, got)
		}
	}
}

// Two processes (a gateway and a chat) indexing the same data dir at once
// index each entry once: the watermarks are read and advanced in one write
// transaction.
func TestSyncTwoProcessesNoDuplicates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other, err := sqlitedb.Open(filepath.Join(filepath.Dir(f.ws), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ss2, _ := session.Open(ctx, other)
	ix2, err := Open(ctx, Options{DB: other, HistoryPath: f.hist, Workspace: f.ws, Sessions: ss2})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, ix := range []*Index{f.ix, ix2} {
		go func() {
			var err error
			for i := range 20 {
				if i%2 == 0 {
					f.history(t, t0.Add(time.Duration(i)*time.Minute), "user", "entry about otters")
				}
				if err = ix.SyncTurn(ctx); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var docs int
	f.ix.o.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM memindex_docs`).Scan(&docs)
	if docs != 20 {
		t.Fatalf("%d docs for 20 history lines", docs)
	}
}

// A source that cannot be read does not stop a search: what is indexed is
// still found.
func TestSearchDespiteUnreadableSource(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(f.ws, 0o700)
	os.WriteFile(filepath.Join(f.ws, "n.md"), []byte("heron"), 0o600)
	os.MkdirAll(f.hist, 0o700) // HISTORY.md is a directory: reading it fails
	if err := f.ix.SyncTurn(context.Background()); err == nil || !errors.Is(err, ErrIndex) {
		t.Fatalf("sync of a directory as HISTORY.md: %v", err)
	}
	if hits := f.search(t, Query{Text: "heron"}); len(hits) != 1 {
		t.Fatalf("hits %+v", hits)
	}
}

// A MEMORY.md linked in from elsewhere is indexed; other links are not
// followed.
func TestNotesSymlinks(t *testing.T) {
	f := newFixture(t)
	vault := t.TempDir()
	os.MkdirAll(f.ws, 0o700)
	os.WriteFile(filepath.Join(vault, "memory.md"), []byte("- walrus facts"), 0o600)
	os.WriteFile(filepath.Join(vault, "other.md"), []byte("- walrus elsewhere"), 0o600)
	if err := os.Symlink(filepath.Join(vault, "memory.md"), filepath.Join(f.ws, "MEMORY.md")); err != nil {
		t.Skip(err)
	}
	os.Symlink(filepath.Join(vault, "other.md"), filepath.Join(f.ws, "other.md"))
	os.Symlink(vault, filepath.Join(f.ws, "vault"))
	if hits := f.search(t, Query{Text: "walrus"}); len(hits) != 1 || hits[0].Path != "MEMORY.md" {
		t.Fatalf("hits %+v", hits)
	}
}

// Past maxCandidates matches, the newest are ranked: an old passage that
// would score best is not among them.
func TestSearchRanksNewestCandidates(t *testing.T) {
	f := newFixture(t)
	f.history(t, t0, "user", "otter otter otter")
	for i := range maxCandidates + 50 {
		f.history(t, t0.Add(time.Duration(i+1)*time.Hour), "user", "saw an otter by the river, then went home for tea and biscuits")
	}
	hits := f.search(t, Query{Text: "otter", Limit: MaxLimit})
	if len(hits) != MaxLimit {
		t.Fatalf("%d hits", len(hits))
	}
	oldest := t0.Add(51 * time.Hour)
	for _, h := range hits {
		if h.At.Before(oldest) {
			t.Fatalf("hit from outside the newest %d matches: %+v", maxCandidates, h)
		}
	}
	if hits[0].At != t0.Add(time.Duration(maxCandidates+50)*time.Hour) {
		t.Fatalf("equal scores not newest first: %v", hits[0].At)
	}
}
