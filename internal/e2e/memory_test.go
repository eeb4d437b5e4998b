package e2e

import (
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// §7: a `raven chat -m` turn whose model calls remember appends the fact
// under ## Notes of MEMORY.md without touching the owner's text, the
// reply's tool result says exactly what was written, and `raven memory
// log` lists the write.
func TestChatOneShotRemember(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	owner := "# My memory\n\nHand-written, keep as is.\n\n## Family\n- Ana, sister\n"
	e.WriteFile("workspace/MEMORY.md", owner)
	e.Model.Enqueue(fakeopenai.Call("remember", map[string]any{"fact": "Ana's birthday is 3 May", "section": "Family"}))
	e.Model.On(fakeopenai.AfterToolResult(), func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Text("Kept it. " + r.Last().Content)
	})
	r := e.MustRun("chat", "-m", "remember that Ana's birthday is 3 May")
	if !strings.Contains(r.Stdout, `Wrote to MEMORY.md under "## Family":`) || !strings.Contains(r.Stdout, "- Ana's birthday is 3 May (") {
		t.Fatalf("reply:\n%s\n%s", r, e.Model)
	}
	mem := e.ReadFile("workspace/MEMORY.md")
	if !strings.HasPrefix(mem, owner) || !strings.HasPrefix(mem[len(owner):], "- Ana's birthday is 3 May (") || strings.Count(mem, "\n") != strings.Count(owner, "\n")+1 {
		t.Fatalf("MEMORY.md:\n%q", mem)
	}
	var log []struct {
		Section, Text, Origin, Conversation string
	}
	e.MustRun("memory", "log", "--json").JSON(t, &log)
	if len(log) != 1 || log[0].Section != "Family" || !strings.HasPrefix(log[0].Text, "- Ana's birthday is 3 May (") || log[0].Origin != "user" {
		t.Fatalf("memory log: %+v", log)
	}
	if out := e.MustRun("memory", "log").Stdout; !strings.Contains(out, "## Family  (user in cli:") || !strings.Contains(out, "Ana's birthday") {
		t.Fatalf("memory log text:\n%s", out)
	}
}

// §7: `raven memory search` finds what a chat turn said, HISTORY.md lines
// and notes, dated and sourced; hostile queries are plain words; bad
// flags are usage errors.
func TestMemorySearchCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.WriteFile("workspace/memory/HISTORY.md", "- 2026-11-28T09:00:00Z [telegram:42] user: book \"Casa Ana\" for friday (NOT saturday)\n")
	e.WriteFile("workspace/notes/trip.md", "# Trip\n\n## Lisbon\nFlight TP1234 on 12 December, hotel in Alfama.\n")
	e.MustRun("chat", "-m", "the plumber Jo comes on friday")

	var hits []struct {
		Kind, Source, Snippet, Conversation string
		Line                                int
	}
	e.MustRun("memory", "search", "--json", "friday").JSON(t, &hits)
	sources := map[string]bool{}
	for _, h := range hits {
		sources[h.Source] = true
	}
	if len(hits) != 3 || !sources["HISTORY.md line 1 (telegram:42, user)"] {
		t.Fatalf("hits for friday: %+v", hits)
	}
	if out := e.MustRun("memory", "search", `"Casa Ana" NOT (saturday`).Stdout; !strings.Contains(out, "1 result(s)") || !strings.Contains(out, "2026-11-28 09:00 UTC — HISTORY.md line 1") {
		t.Fatalf("hostile query:\n%s", out)
	}
	if out := e.MustRun("memory", "search", "alfama").Stdout; !strings.Contains(out, "notes/trip.md line 3") || !strings.Contains(out, "**Alfama**") {
		t.Fatalf("note search:\n%s", out)
	}
	if out := e.MustRun("memory", "search", "--since", "2026-11-29", "casa").Stdout; !strings.Contains(out, `No memory matches "casa"`) {
		t.Fatalf("since:\n%s", out)
	}
	for _, bad := range [][]string{{"memory", "search", "?!"}, {"memory", "search", "--since", "soon", "x"}, {"memory", "search", "--limit", "0", "x"}, {"memory", "search"}} {
		if r := e.Run(bad...); r.Code != 2 {
			t.Errorf("%v: want usage error:\n%s", bad, r)
		}
	}
}
