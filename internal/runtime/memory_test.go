package runtime

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// Through Build with the default config and the real OpenAI provider on
// the fake model: the model remembers a fact (MEMORY.md shows it, the log
// records it), a later turn's memory_search finds both the fact and an
// earlier conversation, and the results reach the model's next request.
func TestMemoryToolsThroughBuild(t *testing.T) {
	fake := fakeopenai.Start(t, fakeopenai.Options{})
	settled, done := settledOn()
	a, _ := newApp(t, false, nil, settled, func(o *Options) {
		o.Config.Model = "openai/" + fakeopenai.DefaultModel
		o.Config.Providers.OpenAI.BaseURL = fake.BaseURL()
		o.Config.Providers.OpenAI.APIKey = "sk-test"
	})
	owner := "# Memory\n\nMine, hand-written.\n\n## Notes\n- likes tea\n\n## Family\n- Ana\n"
	os.MkdirAll(a.Paths().Workspace(), 0o700)
	os.WriteFile(a.Paths().Memory(), []byte(owner), 0o600)

	turn(t, a, "the harbour master is called Ines")
	<-done
	// The turn was indexed as it finished, not at search time.
	var indexed int
	if err := a.DB().QueryRow(`SELECT COUNT(*) FROM memindex_docs WHERE body LIKE '%Ines%'`).Scan(&indexed); err != nil || indexed != 4 {
		t.Fatalf("after the turn, %d indexed passages name Ines (want the message and the echoing reply, each in HISTORY.md and the session): %v", indexed, err)
	}
	fake.Enqueue(fakeopenai.Call("remember", map[string]any{"fact": "Boat mooring is berth 14 at the north pier"}))
	turn(t, a, "remember my berth: 14, north pier")
	fake.Enqueue(fakeopenai.Call("memory_search", map[string]any{"query": "berth harbour Ines"}))
	reply := turn(t, a, "what do you know about the harbour?")

	reqs := fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model calls, want 5:\n%s", len(reqs), fake)
	}
	if r, ok := reqs[2].ToolResult("call_fake_2_1"); !ok || r.Content != `Wrote to MEMORY.md under "## Notes":`+"\n- Boat mooring is berth 14 at the north pier (noted 2025-03-04)" {
		t.Fatalf("remember's result to the model: %+v\n%s", r, fake)
	}
	got, _ := os.ReadFile(a.Paths().Memory())
	want := strings.Replace(owner, "- likes tea\n", "- likes tea\n- Boat mooring is berth 14 at the north pier (noted 2025-03-04)\n", 1)
	if string(got) != want {
		t.Fatalf("MEMORY.md:\n%q\nwant\n%q", got, want)
	}
	log, err := a.MemoryWriter().Log(context.Background(), 0)
	if err != nil || len(log) != 1 || log[0].Origin != "user" || log[0].Conversation != "cli:local" || log[0].Section != "Notes" {
		t.Fatalf("memory log: %+v %v", log, err)
	}
	// The next turn's system prompt carries the fact too.
	if !strings.Contains(reqs[3].System(), "berth 14") {
		t.Fatalf("remembered fact not in the next prompt:\n%s", reqs[3].System())
	}
	res := reqs[4].Last()
	if res.Role != "tool" || !strings.Contains(res.Content, "MEMORY.md line") || !strings.Contains(res.Content, "**Ines**") ||
		!strings.Contains(res.Content, "(cli:local, user)") {
		t.Fatalf("memory_search's result to the model:\n%s", res.Content)
	}
	if reply != "done." {
		t.Fatalf("reply %q", reply)
	}
}
