package e2e

import (
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// Issue 12 §5: the tools' schemas the model receives are derived from
// their Go argument types (bounds included), and a call that does not fit
// comes back to the model as "invalid arguments for TOOL: ..." naming the
// field, after which a corrected call runs.
func TestToolArgumentsValidatedFromDerivedSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.WriteFile("workspace/notes.md", "buy milk")
	e.Model.Enqueue(
		fakeopenai.Call("read_file", map[string]any{"path": "notes.md", "lines": 3}),
		fakeopenai.Call("read_file", map[string]any{"path": "notes.md"}),
	)
	e.Model.On(fakeopenai.AfterToolResult(), func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Text("Your notes say: " + r.Last().Content)
	})
	r := e.Run("chat", "-m", "what do my notes say?")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Your notes say: buy milk") {
		t.Fatalf("chat -m:\n%s\n%s", r, e.Model)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls:\n%s", len(reqs), e.Model)
	}
	if got := reqs[1].Last().Content; !strings.Contains(got, `invalid arguments for read_file: unexpected additional properties ["lines"]`) {
		t.Fatalf("the model was told %q", got)
	}
	var schema string
	for _, tl := range reqs[0].Tools {
		if tl.Name == "read_file" {
			schema = string(tl.Parameters)
		}
	}
	for _, want := range []string{`"additionalProperties":false`, `"maxLength":4096`, `"minLength":1`, `"required":["path"]`} {
		if !strings.Contains(schema, want) {
			t.Fatalf("read_file schema %s lacks %s", schema, want)
		}
	}
	if strings.Contains(strings.Join(reqs[0].ToolNames(), ","), "tool_search") {
		t.Fatalf("tool_search offered without external tools: %v", reqs[0].ToolNames())
	}
}

// tools.search_threshold is a config key like any other: its default,
// a bad value refused naming the key, a good one kept.
func TestConfigSearchThreshold(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	if r := e.MustRun("config", "get", "tools.search_threshold"); strings.TrimSpace(r.Stdout) != "40" {
		t.Fatalf("default: %s", r)
	}
	if r := e.Run("config", "set", "tools.search_threshold", "0"); r.Code != 2 || !strings.Contains(r.Stderr, "tools.search_threshold") {
		t.Fatalf("set 0: %s", r)
	}
	e.MustRun("config", "set", "tools.search_threshold", "60")
	if r := e.MustRun("config", "get", "tools.search_threshold"); strings.TrimSpace(r.Stdout) != "60" {
		t.Fatalf("after set: %s", r)
	}
}
