package memindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

func newWriter(t *testing.T, f *fixture) (*Writer, string, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	p := filepath.Join(f.ws, "MEMORY.md")
	w, err := NewWriter(WriterOptions{DB: f.ix.o.DB, MemoryPath: p, Index: f.ix, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return w, p, clk
}

// The owner's MEMORY.md is byte-identical around every line remember
// inserts, whatever section it goes to.
func TestRememberNeverRewritesOwnerText(t *testing.T) {
	f := newFixture(t)
	w, p, _ := newWriter(t, f)
	ctx := context.Background()
	owner := "# What Raven should know\r\n\r\nI hand-wrote this   with odd  spacing.\n\n## Family\n- Ana: birthday 3 May\n\n\n## Notes\n- prefers tea\n\n## Work\nno trailing newline"
	os.MkdirAll(f.ws, 0o700)
	os.WriteFile(p, []byte(owner), 0o600)
	cases := []struct {
		fact, section, wantSection, wantLine string
	}{
		{"Flight to Lisbon on 12 December", "", "Notes", "- Flight to Lisbon on 12 December (noted 2026-12-01)"},
		{"Ana likes  orchids\nand ferns", "## Family", "Family", "- Ana likes orchids and ferns (noted 2026-12-01)"},
		{"Quarterly report due Friday", "Work", "Work", "- Quarterly report due Friday (noted 2026-12-01)"},
		{"Car service in March", "Car", "Car", "- Car service in March (noted 2026-12-01)"},
	}
	for _, c := range cases {
		before, _ := os.ReadFile(p)
		wr, err := w.Remember(ctx, Fact{Text: c.fact, Section: c.section, Origin: "user", Conversation: "cli:local"})
		if err != nil {
			t.Fatalf("%q: %v", c.fact, err)
		}
		if wr.Section != c.wantSection || wr.Text != c.wantLine || wr.Already {
			t.Fatalf("%q: wrote %+v", c.fact, wr)
		}
		after, _ := os.ReadFile(p)
		i := strings.Index(string(after), c.wantLine)
		if i < 0 {
			t.Fatalf("%q: line not in %q", c.fact, after)
		}
		if ins, ok := insertion(string(before), string(after)); !ok || !strings.Contains(ins, c.wantLine) || len(ins) > len(c.wantLine)+len("\n\n## Car\n")+1 {
			t.Fatalf("%q: not a single insertion of the line:\nbefore %q\nafter  %q", c.fact, before, after)
		}
		body, _ := sectionBodyOf(string(after), c.wantSection)
		if !strings.Contains(body, c.wantLine) {
			t.Fatalf("%q: not under ## %s: %q", c.fact, c.wantSection, after)
		}
	}
	log, err := w.Log(ctx, 0)
	if err != nil || len(log) != len(cases) || log[0].Text != cases[0].wantLine || log[0].Origin != "user" || log[3].Section != "Car" {
		t.Fatalf("log: %+v %v", log, err)
	}
	if last, _ := w.Log(ctx, 1); len(last) != 1 || last[0].Section != "Car" {
		t.Fatalf("last write: %+v", last)
	}
	// The fact is searchable at once.
	if hits, err := f.ix.Search(ctx, Query{Text: "Lisbon"}); err != nil || len(hits) != 1 || hits[0].Path != "MEMORY.md" {
		t.Fatalf("search after remember: %+v %v", hits, err)
	}
}

// insertion reports whether after is before with one run of bytes
// inserted, and returns that run.
func insertion(before, after string) (string, bool) {
	p := 0
	for p < len(before) && before[p] == after[p] {
		p++
	}
	sfx := 0
	for sfx < len(before)-p && before[len(before)-1-sfx] == after[len(after)-1-sfx] {
		sfx++
	}
	if p+sfx != len(before) {
		return "", false
	}
	return after[p : len(after)-sfx], true
}

func sectionBodyOf(md, heading string) (string, bool) {
	for _, part := range strings.Split(md, "\n## ") {
		if h, body, ok := strings.Cut(part, "\n"); ok && strings.TrimSpace(h) == heading {
			return body, true
		}
	}
	return "", false
}

func TestRememberRefusesAndDeduplicates(t *testing.T) {
	f := newFixture(t)
	w, p, clk := newWriter(t, f)
	ctx := context.Background()
	if _, err := w.Remember(ctx, Fact{Text: "likes jazz"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(48 * time.Hour)
	wr, err := w.Remember(ctx, Fact{Text: "likes   jazz"})
	if err != nil || !wr.Already || wr.Text != "- likes jazz (noted 2026-12-01)" {
		t.Fatalf("second remember: %+v %v", wr, err)
	}
	cases := []struct {
		f   Fact
		err error
	}{
		{Fact{Text: "  \n "}, ErrEmptyFact},
		{Fact{Text: strings.Repeat("x", MaxFactBytes+1)}, ErrFactTooLong},
		{Fact{Text: "ok", Section: "two\nlines"}, ErrBadSection},
		{Fact{Text: "ok", Section: strings.Repeat("s", MaxSectionBytes+1)}, ErrBadSection},
	}
	for _, c := range cases {
		if _, err := w.Remember(ctx, c.f); !errors.Is(err, c.err) {
			t.Errorf("%+v: %v, want %v", c.f, err, c.err)
		}
	}
	b, _ := os.ReadFile(p)
	if string(b) != "## Notes\n- likes jazz (noted 2026-12-01)\n" {
		t.Fatalf("MEMORY.md = %q", b)
	}
	if log, _ := w.Log(ctx, 0); len(log) != 1 {
		t.Fatalf("log: %+v", log)
	}
}

// The tools through the registry: schema-validated arguments, the turn's
// origin in the log, results the model can read.
func TestTools(t *testing.T) {
	f := newFixture(t)
	w, _, clk := newWriter(t, f)
	st, err := SearchTool(f.ix, clk)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := RememberTool(w)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(st, rt)
	ctx := tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginUser, Conversation: "telegram:42"})
	run := func(name, args string) (string, error) {
		return reg.Run(ctx, llm.ToolCall{ID: "1", Name: name, Arguments: args})
	}
	out, err := run(RememberToolName, `{"fact":"The boat is called Osprey","section":"Boat"}`)
	if err != nil || out != "Wrote to MEMORY.md under \"## Boat\":\n- The boat is called Osprey (noted 2026-12-01)" {
		t.Fatalf("remember: %q %v", out, err)
	}
	if log, _ := w.Log(context.Background(), 0); len(log) != 1 || log[0].Origin != "user" || log[0].Conversation != "telegram:42" {
		t.Fatalf("log: %+v", log)
	}
	f.history(t, clk.Now().Add(-72*time.Hour), "user", "we sailed the Osprey to the island")
	out, err = run(SearchToolName, `{"query":"osprey"}`)
	if err != nil || !strings.Contains(out, "2 result(s)") || !strings.Contains(out, "MEMORY.md line 1") || !strings.Contains(out, "HISTORY.md line 1 (cli:local, user)") || !strings.Contains(out, "**Osprey**") {
		t.Fatalf("search: %q %v", out, err)
	}
	out, err = run(SearchToolName, `{"query":"osprey","since":"1d"}`)
	if err != nil || !strings.Contains(out, "1 result(s)") || strings.Contains(out, "HISTORY.md") {
		t.Fatalf("search since: %q %v", out, err)
	}
	for _, bad := range []string{`{"query":""}`, `{"query":"x","limit":0}`, `{"query":"x","limit":51}`, `{"query":"x","since":"soon"}`, `{"query":"x","extra":1}`, `{"query":"?!"}`} {
		if _, err := run(SearchToolName, bad); err == nil {
			t.Errorf("memory_search %s: no error", bad)
		}
	}
	if _, err := run(RememberToolName, `{"fact":"`+strings.Repeat("x", MaxFactBytes+1)+`"}`); err == nil {
		t.Error("remember: oversize fact accepted")
	}
}
