package memindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/tools"
)

// Tool names.
const (
	SearchToolName   = "memory_search"
	RememberToolName = "remember"
)

type searchArgs struct {
	Query string `json:"query" jsonschema:"words to look for; every word must match, or any when none has them all"`
	Since string `json:"since,omitempty" jsonschema:"only entries from then on: a date (2026-11-30), an RFC 3339 time, or a span back from now (36h, 7d, 2w)"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results at most (default 8)"`
}

type rememberArgs struct {
	Fact    string `json:"fact" jsonschema:"the fact to keep, one self-contained sentence"`
	Section string `json:"section,omitempty" jsonschema:"the MEMORY.md section (an H2 heading) to file it under; default Notes"`
}

func intp(n int) *int                                           { return &n }
func floatp(n float64) *float64                                 { return &n }
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema { return s.Properties[name] }

// SearchTool is memory_search: past conversations, HISTORY.md and the
// workspace's notes (MEMORY.md included), ranked, dated and sourced.
func SearchTool(ix *Index, clk clock.Clock) (tools.Tool, error) {
	if clk == nil {
		clk = clock.Real()
	}
	return tools.New(SearchToolName,
		"Search your long-term memory: past conversations, HISTORY.md and the workspace's notes (MEMORY.md included). "+
			"Use it when the owner refers to something earlier that is not in the prompt. Returns dated snippets, best first, each with where it came from.",
		func(ctx context.Context, a searchArgs) (string, error) {
			since, err := ParseSince(a.Since, clk.Now())
			if err != nil {
				return "", err
			}
			hits, err := ix.Search(ctx, Query{Text: a.Query, Since: since, Limit: a.Limit})
			if err != nil {
				return "", err
			}
			return FormatHits(a.Query, hits), nil
		},
		func(s *jsonschema.Schema) {
			prop(s, "query").MinLength, prop(s, "query").MaxLength = intp(1), intp(MaxQueryBytes)
			prop(s, "since").MaxLength = intp(64)
			prop(s, "limit").Minimum, prop(s, "limit").Maximum = floatp(1), floatp(MaxLimit)
		})
}

// FormatHits renders hits as the tool result and the CLI's text output.
func FormatHits(query string, hits []Hit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No memory matches %q.", query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d result(s) for %q, best first:\n", len(hits), query)
	for i, h := range hits {
		fmt.Fprintf(&b, "%d. %s — %s\n   %s\n", i+1, h.At.Format("2006-01-02 15:04 UTC"), h.Source(), strings.Join(strings.Fields(h.Snippet), " "))
	}
	return b.String()
}

// RememberTool is remember: one fact appended to MEMORY.md, answered with
// exactly the line written, so the model and the owner both see it.
func RememberTool(w *Writer) (tools.Tool, error) {
	return tools.New(RememberToolName,
		"Keep a fact in MEMORY.md, the long-term memory the owner reads and edits. Use it for things worth knowing in later "+
			"conversations (preferences, people, dates, decisions), not for the task at hand. Appends one dated line under an H2 section "+
			"and never changes what is there; returns exactly what it wrote.",
		func(ctx context.Context, a rememberArgs) (string, error) {
			f := Fact{Text: a.Fact, Section: a.Section, Origin: "agent"}
			if t, ok := tools.TurnFrom(ctx); ok {
				f.Origin, f.Conversation = string(t.Origin), t.Conversation
			}
			wr, err := w.Remember(ctx, f)
			if err != nil {
				return "", err
			}
			if wr.Already {
				return fmt.Sprintf("Already in MEMORY.md under \"## %s\", nothing written:\n%s", wr.Section, wr.Text), nil
			}
			return fmt.Sprintf("Wrote to MEMORY.md under \"## %s\":\n%s", wr.Section, wr.Text), nil
		},
		func(s *jsonschema.Schema) {
			prop(s, "fact").MinLength, prop(s, "fact").MaxLength = intp(1), intp(MaxFactBytes)
			prop(s, "section").MaxLength = intp(MaxSectionBytes)
		})
}
