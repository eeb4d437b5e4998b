package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

func extTool(name, desc string) *mapTool {
	return &mapTool{name: name, desc: desc, params: map[string]any{"type": "object"}}
}

func searchRegistry(threshold int, ts ...*mapTool) *Registry {
	r := NewRegistryWith(RegistryOptions{SearchThreshold: threshold})
	for _, t := range ts {
		r.RegisterExternal(t)
	}
	return r
}

func TestSearchRanking(t *testing.T) {
	r := searchRegistry(1,
		extTool("github__create_issue", "Create an issue in a GitHub repository."),
		extTool("github__list_issues", "List the issues of a repository, newest first."),
		extTool("jira__create_ticket", "Open a ticket; Jira calls an issue a ticket."),
		extTool("fs__read", "Read a file. A very long description that mentions issue once among many other words: "+
			strings.Repeat("bytes lines encoding offsets ", 40)),
		extTool("calendar__events", "Upcoming events from the owner's calendar."),
		extTool("weather__forecast", "Forecast for a city."),
		extTool("forecast__get", "Get a stored value."),
		extTool("notes__searchNotes", "Full-text search over notes."),
		extTool("hooks__subscribe", "Subscribe to events from a webhook."),
	)
	cases := []struct {
		name, query string
		want        []string // the first len(want) results, in order
		absent      []string
	}{
		{"exact full name first", "github__list_issues", []string{"github__list_issues"}, nil},
		{"exact name without the server prefix first", "forecast", []string{"weather__forecast", "forecast__get"}, nil},
		{"every word in the name first", "create issue", []string{"github__create_issue"}, []string{"calendar__events"}},
		{"name token beats description token", "events", []string{"calendar__events", "hooks__subscribe"}, nil},
		{"plural folded", "issues ticket", []string{"jira__create_ticket"}, nil},
		{"description token alone still found", "ticket", []string{"jira__create_ticket"}, nil},
		{"long description does not win on volume", "issue", []string{"github__create_issue", "github__list_issues"}, nil},
		{"prefix of a word", "calend", []string{"calendar__events"}, nil},
		{"camelCase split", "search notes", []string{"notes__searchNotes"}, nil},
		{"case folded", "CALENDAR Events", []string{"calendar__events"}, nil},
		{"nothing matches", "zzz qqq", nil, []string{"github__create_issue"}},
		{"short words are not prefixes", "cr", nil, []string{"github__create_issue"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := r.Search(c.query, 5)
			var got []string
			for _, f := range found {
				got = append(got, f.Name)
			}
			if len(got) < len(c.want) || !slices.Equal(got[:len(c.want)], c.want) {
				t.Fatalf("Search(%q) = %v, want first %v", c.query, got, c.want)
			}
			for _, a := range c.absent {
				if slices.Contains(got, a) {
					t.Fatalf("Search(%q) = %v, want no %s", c.query, got, a)
				}
			}
			if c.want == nil && len(got) != 0 {
				t.Fatalf("Search(%q) = %v, want nothing", c.query, got)
			}
		})
	}
	if got := r.Search("issue", 1); len(got) != 1 {
		t.Fatalf("limit not applied: %v", got)
	}
}

// Past the threshold, external tools leave the offered list for
// tool_search; Raven's own tools stay; what a search finds joins the
// list; a hidden tool called by name still runs.
func TestOfferedThreshold(t *testing.T) {
	own := extTool("own", "a built-in")
	cases := []struct {
		name      string
		threshold int
		externals int
		searching bool
	}{
		{"under the threshold: everything", 10, 5, false},
		{"at the threshold: everything", 6, 5, false},
		{"past the threshold: tool_search", 5, 5, true},
		{"many tools, none external: no search", 1, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{SearchThreshold: c.threshold}, own)
			for i := range c.externals {
				r.RegisterExternal(extTool(fmt.Sprintf("srv__t%d", i), fmt.Sprintf("tool number %d", i)))
			}
			if c.externals == 0 {
				r.Register(extTool("own2", "another built-in"))
			}
			names := defNames(r.Offered(nil))
			if got := slices.Contains(names, ToolSearchName); got != c.searching {
				t.Fatalf("offered %v, tool_search offered = %v, want %v", names, got, c.searching)
			}
			if !slices.Contains(names, "own") {
				t.Fatalf("own tool hidden: %v", names)
			}
			if c.searching && slices.Contains(names, "srv__t1") {
				t.Fatalf("external tool offered past the threshold: %v", names)
			}
			if !c.searching && c.externals > 0 && !slices.Contains(names, "srv__t1") {
				t.Fatalf("external tool hidden under the threshold: %v", names)
			}
			if slices.Contains(defNames(r.Defs()), ToolSearchName) {
				t.Fatal("Defs (the catalogue) lists tool_search")
			}
		})
	}

	r := NewRegistryWith(RegistryOptions{SearchThreshold: 2}, own)
	for i := range 3 {
		r.RegisterExternal(extTool(fmt.Sprintf("srv__t%d", i), fmt.Sprintf("tool number %d", i)))
	}
	r.RegisterExternal(extTool("mail__send", "Send an email."))
	act := NewActivation()
	ctx := WithActivation(context.Background(), act)
	out, err := r.Run(ctx, llm.ToolCall{Name: ToolSearchName, Arguments: `{"query":"email","limit":3}`})
	if err != nil || !strings.Contains(out, "- mail__send: Send an email.") || !strings.Contains(out, "next step") {
		t.Fatalf("tool_search = %q, %v", out, err)
	}
	names := defNames(r.Offered(act))
	if !slices.Contains(names, "mail__send") || slices.Contains(names, "srv__t0") || !slices.Contains(names, ToolSearchName) {
		t.Fatalf("after the search, offered %v", names)
	}
	if d := searchDef(r.Offered(nil)); !strings.Contains(d.Description, "4 tools are available but not listed (from: mail, srv)") {
		t.Fatalf("tool_search description %q", d.Description)
	}
	if out, err := r.Run(context.Background(), llm.ToolCall{Name: "srv__t2", Arguments: `{}`}); err != nil || out != "ran" {
		t.Fatalf("hidden tool called by name: %q %v", out, err)
	}
	for _, bad := range []string{`{}`, `{"query":""}`, `{"query":"x","limit":99}`} {
		if _, err := r.Run(ctx, llm.ToolCall{Name: ToolSearchName, Arguments: bad}); err == nil {
			t.Fatalf("tool_search accepted %s", bad)
		}
	}
	r.SetSearchThreshold(100)
	if slices.Contains(defNames(r.Offered(nil)), ToolSearchName) {
		t.Fatal("raised threshold not applied")
	}
	// A change of the external set rebuilds the index.
	r.Unregister("mail__send")
	if got := r.Search("email", 5); len(got) != 0 {
		t.Fatalf("removed tool still found: %v", got)
	}
}

func defNames(ds []llm.Tool) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

func searchDef(ds []llm.Tool) llm.Tool {
	for _, d := range ds {
		if d.Name == ToolSearchName {
			return d
		}
	}
	return llm.Tool{}
}

var benchWords = strings.Fields("create list get update delete search read write send fetch issue ticket file " +
	"folder event calendar mail message user group repo branch commit page note task project invoice payment " +
	"order customer report metric alert log trace deploy build image volume secret key record query table row")

// BenchmarkToolSearch is one tool_search ranking over 1,000 external tools
// from 20 servers (the index is built once, outside the loop).
func BenchmarkToolSearch(b *testing.B) {
	r := benchRegistry(1000)
	r.Search("warm", 1)
	b.ReportAllocs()
	for b.Loop() {
		if len(r.Search("create calendar event for a customer", 5)) == 0 {
			b.Fatal("nothing found")
		}
	}
}

// BenchmarkToolSearchIndex is the index build the first search after a
// change of the external tools pays (an MCP server listing its tools).
func BenchmarkToolSearchIndex(b *testing.B) {
	r := benchRegistry(1000)
	b.ReportAllocs()
	for b.Loop() {
		r.mu.Lock()
		r.index = nil
		r.mu.Unlock()
		r.Search("event", 1)
	}
}

func benchRegistry(n int) *Registry {
	r := NewRegistry()
	for i := range n {
		w := func(k int) string { return benchWords[(i*7+k*13)%len(benchWords)] }
		name := fmt.Sprintf("srv%02d__%s_%s_%d", i%20, w(0), w(1), i)
		desc := fmt.Sprintf("%s the %s of a %s, with %s and %s options. Returns the %s %s as JSON.",
			w(2), w(3), w(4), w(5), w(6), w(7), w(8))
		r.RegisterExternal(extTool(name, desc))
	}
	return r
}
