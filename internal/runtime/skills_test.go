package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// fakeModelApp is newApp with the default config's model pointed at the
// project's fake OpenAI-compatible server, as a user's config would be.
func fakeModelApp(t *testing.T) (*Runtime, *fakeopenai.Server) {
	t.Helper()
	srv := fakeopenai.Start(t, fakeopenai.Options{})
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	t.Setenv("OPENAI_API_KEY", "x")
	rt, _ := newApp(t, false, nil, func(o *Options) { o.Config.Model = "openai/" + fakeopenai.DefaultModel })
	return rt, srv
}

func writeSkillFile(t *testing.T, dir, src string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Progressive disclosure through the assembled runtime: the model sees a
// workspace skill's name and description in the system prompt, not its
// body; use_skill gives it the body and the folder's files.
func TestSkillsPromptListsNamesAndUseSkillGivesBody(t *testing.T) {
	rt, srv := fakeModelApp(t)
	dir := filepath.Join(rt.Paths().Workspace(), "skills", "bake-bread")
	writeSkillFile(t, dir, "---\nname: bake-bread\ndescription: Bake sourdough bread at home.\nallowed-tools: exec\n---\n# Method\nKNEAD-FOR-TEN-MINUTES then rest.\n")
	if err := os.WriteFile(filepath.Join(dir, "timings.md"), []byte("rise 4h"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(fakeopenai.Call("use_skill", map[string]any{"name": "bake-bread"}))
	srv.Enqueue(fakeopenai.Call("read_skill_file", map[string]any{"name": "bake-bread", "path": "timings.md"}))
	srv.Enqueue(fakeopenai.Text("Knead for ten minutes, then let it rise for 4 hours."))
	if got := turn(t, rt, "how do I bake bread?"); !strings.Contains(got, "Knead") {
		t.Fatalf("reply %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls:\n%s", len(reqs), srv)
	}
	sys := reqs[0].System()
	if !strings.Contains(sys, "- bake-bread: Bake sourdough bread at home.") || strings.Contains(sys, "KNEAD") {
		t.Fatalf("system prompt should list the skill but not its body:\n%s", sys)
	}
	if !reqs[0].HasTool("use_skill") || !reqs[0].HasTool("read_skill_file") {
		t.Fatalf("skill tools not offered: %v", reqs[0].ToolNames())
	}
	used := reqs[1].Last()
	if used.Role != "tool" || !strings.Contains(used.Content, "KNEAD-FOR-TEN-MINUTES") || !strings.Contains(used.Content, "  timings.md\n") ||
		!strings.Contains(used.Content, "Tools this skill expects to use: exec") {
		t.Fatalf("use_skill result:\n%+v", used)
	}
	if read := reqs[2].Last(); read.Content != "rise 4h" {
		t.Fatalf("read_skill_file result: %+v", read)
	}
}

// Without skills the prompt has no skills section and the tools are not
// offered; an installed skill (data dir) appears on the next turn.
func TestSkillsAbsentThenInstalled(t *testing.T) {
	rt, srv := fakeModelApp(t)
	srv.Enqueue(fakeopenai.Text("ok"))
	turn(t, rt, "hi")
	if r := srv.Requests()[0]; strings.Contains(r.System(), "# Skills") || r.HasTool("use_skill") {
		t.Fatalf("no skills, yet: tools %v\n%s", r.ToolNames(), r.System())
	}
	writeSkillFile(t, filepath.Join(rt.Paths().Root, "skills", "tax-return"), "---\nname: tax-return\ndescription: File the yearly tax return.\n---\nSteps.\n")
	srv.Enqueue(fakeopenai.Text("ok"))
	turn(t, rt, "hi again")
	if r := srv.Requests()[1]; !strings.Contains(r.System(), "- tax-return: File the yearly tax return.") || !r.HasTool("use_skill") {
		t.Fatalf("installed skill not seen: tools %v\n%s", r.ToolNames(), r.System())
	}
}
