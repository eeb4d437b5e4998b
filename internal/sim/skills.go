package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/skills"
)

var skillsSection = section{
	name:  "skills",
	title: "Skills — installed without running, listed by name, read when picked",
	blurb: "Friday afternoon. The owner installs a downloaded weekly-review skill (validated and copied; " +
		"nothing in it runs) and has drafted a plant-care skill in the workspace. Every turn's system " +
		"prompt lists only the skills' names and descriptions; when the owner asks for the weekly review " +
		"the model calls use_skill to read that skill's instructions, then read_skill_file for its checklist.",
	run: runSkills,
}

const (
	reviewSkill = "---\nname: weekly-review\n" +
		"description: The owner's Friday weekly review. Use when asked for a weekly review or how the week went.\n" +
		"license: MIT\nallowed-tools: read_file list_dir\n---\n" +
		"# Weekly review\n1. Read checklist.md (read_skill_file) and notes/week.md (read_file).\n" +
		"2. Reply in three short parts: Done, Still open, Next week.\n" +
		"3. scripts/collect.sh gathers open loops into a file; run it (exec) only if the owner asks for one.\n"
	plantSkill = "---\nname: plant-care\ndescription: Watering and repotting the owner's house plants.\n---\n" +
		"Water the fern on Mondays and Thursdays.\n"
	reviewChecklist = "- Count the `[x]` items: that is Done.\n- `[ ]` items are Still open.\n- Look for dates next week.\n"
	weekNotes       = "- [x] passport renewal posted\n- [x] bank call\n- [ ] book the boiler service\n- Tuesday: dentist 09:30\n"
	reviewReply     = "Your week — Done: passport renewal posted, bank call. Still open: book the boiler service. " +
		"Next week: dentist on Tuesday at 09:30."
)

func runSkills(ctx context.Context, e *env) error {
	e.clk.Set(at(4, 16, 30))
	// What the owner downloaded: a skill with a script that, were it ever
	// run, would leave a mark in the workspace.
	src := filepath.Join(e.paths.Root, "downloads", "weekly-review")
	marker := filepath.Join(e.paths.Workspace(), "collect-ran")
	files := map[string]string{
		skills.FileName:      reviewSkill,
		"checklist.md":       reviewChecklist,
		"scripts/collect.sh": "#!/bin/sh\ntouch " + marker + "\n",
	}
	for rel, content := range files {
		if err := writeFile(filepath.Join(src, rel), content, 0o755); err != nil {
			return err
		}
	}
	in, err := skills.Install(src, e.paths.Root)
	if err != nil {
		return err
	}
	e.emit(Event{Kind: "skills.install", Label: "owner", Text: fmt.Sprintf("raven skills install downloads/weekly-review → skills/%s: %d file(s), %d bytes; nothing in it was run",
		in.Skill.Name, in.Files, in.Bytes),
		Why:  "install validates SKILL.md's front matter and copies plain files only (links, devices and oversize folders are refused); scripts stay data until exec runs one",
		Data: map[string]any{"skill": in.Skill.Name, "files": in.Files, "bytes": in.Bytes}})
	if err := writeFile(filepath.Join(e.paths.Workspace(), "skills", "plant-care", skills.FileName), plantSkill, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(e.paths.Workspace(), "notes", "week.md"), weekNotes, 0o644); err != nil {
		return err
	}

	script := llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{Name: skills.UseToolName, Arguments: jsonArgs(map[string]any{"name": "weekly-review"})}}},
		{ToolCalls: []llm.ToolCall{{Name: skills.ReadToolName, Arguments: jsonArgs(map[string]any{"name": "weekly-review", "path": "checklist.md"})}}},
		{ToolCalls: []llm.ToolCall{{Name: "read_file", Arguments: jsonArgs(map[string]any{"path": "notes/week.md"})}}},
		{Content: reviewReply},
	})
	var promptErr error
	model := &narrated{inner: script, e: e, before: func(n int, req llm.Request) {
		if n != 1 {
			return
		}
		sys := req.Messages[0].Content
		_, idx, found := strings.Cut(sys, "# Skills")
		if !found || !strings.Contains(idx, "- plant-care: ") || !strings.Contains(idx, "- weekly-review: ") || strings.Contains(sys, "Still open") {
			promptErr = fmt.Errorf("the system prompt's skills section is wrong:\n%s", idx)
			return
		}
		size := len("# Skills") + len(idx)
		e.emit(Event{Kind: "turn.fact", Label: "agent", Text: fmt.Sprintf("prompt carries the skills index: 2 names and descriptions (%d bytes), no skill's instructions", size),
			Why:  "progressive disclosure: a skill costs the prompt one line until the model picks it",
			Data: map[string]any{"index_bytes": size, "skills": 2}})
	}}
	rt, err := e.newRuntime(ctx, build{model: model})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	if _, err := e.turn(ctx, rt, "Can you do my weekly review?"); err != nil {
		return err
	}
	if promptErr != nil {
		return promptErr
	}
	reqs := script.Requests()
	if len(reqs) != 4 {
		return fmt.Errorf("the turn made %d model calls, want 4", len(reqs))
	}
	if got := toolResult(reqs[1]); !strings.Contains(got, "2. Reply in three short parts") || !strings.Contains(got, "  scripts/collect.sh\n") {
		return fmt.Errorf("use_skill gave the model %q", got)
	}
	if got := toolResult(reqs[2]); got != reviewChecklist {
		return fmt.Errorf("read_skill_file gave the model %q", got)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the skill's script ran (%v)", err)
	}
	e.emit(Event{Kind: "skills.not_run", Label: "skills", Text: "scripts/collect.sh never ran: installing, listing and reading a skill run nothing",
		Why:  "a skill's script runs only if the model calls exec with it, under exec's sandbox and the owner's approval",
		Data: map[string]any{"script": "scripts/collect.sh", "ran": false}})
	return nil
}

// toolResult is the last message of a request when it is a tool result.
func toolResult(r llm.Request) string {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == llm.RoleTool {
		return r.Messages[n-1].Content
	}
	return ""
}

func writeFile(path, content string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), perm)
}
