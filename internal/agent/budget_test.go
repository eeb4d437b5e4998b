package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

// MEMORY.md and HISTORY.md are bounded in the system prompt, and the
// prompt says when it shows only part of one and where the rest is.
func TestPromptBudget(t *testing.T) {
	cases := []struct {
		name              string
		memory, history   string
		memBytes          int
		want, notWant     []string
		searchToolPresent bool
	}{
		{name: "within budget: no note", memory: "- likes tea\n", history: "- 2026-11-30T09:00:00Z [cli:direct] user: hi\n", memBytes: 1024,
			want: []string{"- likes tea", "user: hi"}, notWant: []string{"are shown"}},
		{name: "MEMORY.md over budget, cut at a line", memory: "- first fact\n" + strings.Repeat("- filler line\n", 200) + "- last fact\n", memBytes: 1024,
			want: []string{"- first fact", "[MEMORY.md is 2825 bytes; only its first 1021 are shown. Read the file from the workspace.]"}, notWant: []string{"last fact", "- filler li\n"}},
		{name: "history over budget, search named", history: strings.Repeat("- 2026-11-30T09:00:00Z [cli:direct] user: old entry\n", 200) + "- 2026-11-30T10:00:00Z [cli:direct] user: newest\n", memBytes: 1024, searchToolPresent: true,
			want: []string{"newest", "of HISTORY.md's 10449 bytes are shown; for anything older, use memory_search to find the rest.]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, text("ok"))
			f.agent.o.Config.MemoryBytes = c.memBytes
			if c.searchToolPresent {
				f.agent.o.Tools.Register(stubTool{name: "memory_search"})
			}
			os.WriteFile(filepath.Join(f.ws.Root(), "MEMORY.md"), []byte(c.memory), 0o600)
			os.MkdirAll(filepath.Join(f.ws.Root(), "memory"), 0o700)
			os.WriteFile(filepath.Join(f.ws.Root(), "memory", "HISTORY.md"), []byte(c.history), 0o600)
			if _, err := runDirect(t, f.agent, userReq("hello")); err != nil {
				t.Fatal(err)
			}
			sys := f.prov.reqs[0].Messages[0]
			if sys.Role != llm.RoleSystem {
				t.Fatalf("no system message: %+v", sys)
			}
			for _, w := range c.want {
				if !strings.Contains(sys.Content, w) {
					t.Errorf("system prompt lacks %q:\n%s", w, sys.Content)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(sys.Content, w) {
					t.Errorf("system prompt has %q", w)
				}
			}
			if len(sys.Content) > c.memBytes+4096+1024 {
				t.Errorf("system prompt %d bytes: over budget", len(sys.Content))
			}
		})
	}
}

type stubTool struct{ name string }

func (s stubTool) Name() string               { return s.name }
func (s stubTool) Description() string        { return "stub" }
func (s stubTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (s stubTool) Run(context.Context, json.RawMessage) (string, error) {
	return "", nil
}
