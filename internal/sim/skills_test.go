package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The skills chapter installs a skill without running it, lists names
// only in the prompt and reads the picked skill's body through use_skill.
func TestDemoSkillsSection(t *testing.T) {
	var buf bytes.Buffer
	events, err := Run(context.Background(), &buf, Options{Dir: t.TempDir(), Section: "skills"})
	if err != nil {
		t.Fatalf("skills section failed: %v\n%s", err, buf.String())
	}
	flat := norm(buf.String())
	for _, want := range []string{
		"raven skills install downloads/weekly-review → skills/weekly-review: 3 file(s)",
		"prompt carries the skills index: 2 names and descriptions",
		"calls use_skill name=“weekly-review”",
		"use_skill → Skill weekly-review (data skill): 2 file(s) besides SKILL.md",
		"calls read_skill_file",
		"read_skill_file → - Count the `[x]` items",
		"Still open: book the boiler service",
		"scripts/collect.sh never ran",
	} {
		if !strings.Contains(flat, norm(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	var notRun bool
	for _, e := range events {
		notRun = notRun || (e.Kind == "skills.not_run" && e.Data["ran"] == false)
	}
	if !notRun || t.Failed() {
		t.Fatalf("output:\n%s", buf.String())
	}
}
