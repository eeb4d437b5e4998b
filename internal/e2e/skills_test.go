package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

const breadSkill = "---\nname: bake-bread\ndescription: Bake sourdough bread at home. Use when the owner asks about bread.\nallowed-tools: read_file\n---\n# Method\nKNEAD-FOR-TEN-MINUTES, rise 4 hours, bake at 230C.\n"

// Issue 12 §2: a skill in workspace/skills is listed, shown and checked by
// the CLI; a broken one fails check with its file and line.
func TestSkillsListShowCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	if r := e.MustRun("skills", "list"); !strings.Contains(r.Stdout, "No skills") {
		t.Fatalf("empty list:\n%s", r)
	}
	e.WriteFile("workspace/skills/bake-bread/SKILL.md", breadSkill)
	e.WriteFile("workspace/skills/bake-bread/notes/flour.md", "strong white")
	r := e.MustRun("skills", "list")
	if !strings.Contains(r.Stdout, "bake-bread  workspace  Bake sourdough bread at home.") {
		t.Fatalf("list:\n%s", r)
	}
	var listed []struct {
		Name, Description, Source string
		AllowedTools              []string `json:"allowed_tools"`
	}
	e.MustRun("skills", "list", "--json").JSON(t, &listed)
	if len(listed) != 1 || listed[0].Name != "bake-bread" || listed[0].Source != "workspace" || len(listed[0].AllowedTools) != 1 {
		t.Fatalf("list --json: %+v", listed)
	}
	r = e.MustRun("skills", "show", "bake-bread")
	for _, want := range []string{"allowed-tools: read_file", "files:         notes/flour.md", "KNEAD-FOR-TEN-MINUTES"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("show lacks %q:\n%s", want, r)
		}
	}
	if r := e.Run("skills", "show", "nosuch"); r.Code != 2 || !strings.Contains(r.Stderr, `no such skill "nosuch"`) {
		t.Fatalf("show nosuch:\n%s", r)
	}
	if r := e.MustRun("skills", "check"); !strings.Contains(r.Stdout, "1 skill(s) usable, 0 error(s)") {
		t.Fatalf("check clean:\n%s", r)
	}
	e.WriteFile("workspace/skills/broken/SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\nbody\n")
	r = e.Run("skills", "check")
	want := e.Path("workspace", "skills", "broken", "SKILL.md") + ":3: error: front matter is not valid YAML"
	if r.Code != 1 || !strings.Contains(r.Stdout, want) || !strings.Contains(r.Stderr, "skills check: 1 error(s)") {
		t.Fatalf("check broken, want %q:\n%s", want, r)
	}
}

// `raven skills install DIR` validates and copies; the skill is then
// listed from the data dir; a bad folder is refused with file:line.
func TestSkillsInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	src := filepath.Join(t.TempDir(), "bread-skill-main")
	for rel, content := range map[string]string{"SKILL.md": breadSkill, "scripts/proof.sh": "#!/bin/sh\necho proofed\n"} {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := e.MustRun("skills", "install", src)
	if !strings.Contains(r.Stdout, "installed bake-bread → "+e.Path("skills", "bake-bread")) || !strings.Contains(r.Stdout, "nothing in it was run") {
		t.Fatalf("install:\n%s", r)
	}
	if r := e.MustRun("skills", "list"); !strings.Contains(r.Stdout, "bake-bread  data") {
		t.Fatalf("list after install:\n%s", r)
	}
	if r := e.Run("skills", "install", src); r.Code != 2 || !strings.Contains(r.Stderr, "already installed") {
		t.Fatalf("reinstall:\n%s", r)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("---\ndescription: no name\n---\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "passwd")); err != nil {
		t.Fatal(err)
	}
	if r := e.Run("skills", "install", src); r.Code != 1 || !strings.Contains(r.Stderr, "passwd is a symbolic link") {
		t.Fatalf("install with a symlink:\n%s", r)
	}
	if r := e.Run("skills", "install", bad); r.Code != 1 || !strings.Contains(r.Stderr, filepath.Join(bad, "SKILL.md")+":1: error: name is required") {
		t.Fatalf("install bad:\n%s", r)
	}
}

// A `raven chat -m` turn that uses a skill: the model is offered the
// skill's name and description, calls use_skill and gets the body.
func TestChatUsesSkill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.WriteFile("workspace/skills/bake-bread/SKILL.md", breadSkill)
	e.Model.Enqueue(fakeopenai.Call("use_skill", map[string]any{"name": "bake-bread"}))
	e.Model.On(fakeopenai.AfterToolResult(), func(r fakeopenai.Request) fakeopenai.Reply {
		body := r.Last().Content
		if strings.Contains(body, "KNEAD-FOR-TEN-MINUTES") {
			return fakeopenai.Text("Knead for ten minutes, rise 4 hours, bake at 230C.")
		}
		return fakeopenai.Text("the skill gave me nothing: " + body)
	})
	r := e.MustRun("chat", "-m", "how do I bake bread?")
	if !strings.Contains(r.Stdout, "Knead for ten minutes") {
		t.Fatalf("chat:\n%s\n%s", r, e.Model)
	}
	first := e.Model.Requests()[0]
	if !strings.Contains(first.System(), "- bake-bread: Bake sourdough bread at home.") || strings.Contains(first.System(), "KNEAD") || !first.HasTool("use_skill") {
		t.Fatalf("first request:\n%s", e.Model)
	}
}
