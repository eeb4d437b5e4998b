package skills

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSkill writes base/name/SKILL.md (and extra files) and returns the folder.
func writeSkill(t testing.TB, base, name, desc, body string, extra map[string]string) string {
	t.Helper()
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, content := range extra {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newTestStore(t testing.TB) (*Store, string, string, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	ws, data := filepath.Join(root, "workspace"), filepath.Join(root, "data")
	var logs bytes.Buffer
	return NewStore(Roots(ws, data), slog.New(slog.NewTextHandler(&logs, nil))), filepath.Join(ws, "skills"), filepath.Join(data, "skills"), &logs
}

func names(c *Catalog) string {
	var out []string
	for _, s := range c.Skills {
		out = append(out, s.Name+"@"+string(s.Source))
	}
	return strings.Join(out, ",")
}

func TestCatalogDiscoversBothRootsWorkspaceWins(t *testing.T) {
	s, ws, data, logs := newTestStore(t)
	if c := s.Catalog(); len(c.Skills) != 0 || len(c.Problems) != 0 {
		t.Fatalf("no folders: %+v", c)
	}
	writeSkill(t, ws, "notes", "Take notes.", "ws body", nil)
	writeSkill(t, data, "notes", "Other notes.", "data body", nil)
	writeSkill(t, data, "bake", "Bake bread.", "knead", nil)
	writeSkill(t, data, "broken", "", "x", nil)
	if err := os.MkdirAll(filepath.Join(data, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := s.Catalog()
	if got := names(c); got != "bake@data,notes@workspace" {
		t.Fatalf("skills = %s", got)
	}
	var clash, broken, empty bool
	for _, p := range c.Problems {
		clash = clash || (errors.Is(p, ErrNameClash) && strings.HasSuffix(p.File, filepath.Join("data", "skills", "notes", FileName)))
		broken = broken || (p.Severity == SeverityError && strings.Contains(p.String(), "broken"+string(filepath.Separator)+FileName+":3: error: description is required"))
		empty = empty || (p.Severity == SeverityWarning && strings.Contains(p.Message, "no SKILL.md"))
	}
	if !clash || !broken || !empty {
		t.Fatalf("problems (clash %v broken %v empty %v): %v", clash, broken, empty, c.Problems)
	}
	if !strings.Contains(logs.String(), "description is required") {
		t.Fatalf("problems not logged: %s", logs)
	}
	_, body, err := s.Load("notes")
	if err != nil || body != "ws body" {
		t.Fatalf("Load(notes) = %q, %v", body, err)
	}
	if _, _, err := s.Load("nosuch"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(nosuch) = %v", err)
	}
}

// A turn does not re-read an unchanged SKILL.md; an edit is seen at once,
// and problems are logged once per change, not per turn.
func TestCatalogCachesByModTime(t *testing.T) {
	s, ws, _, logs := newTestStore(t)
	dir := writeSkill(t, ws, "notes", "Take notes.", "b", nil)
	writeSkill(t, ws, "bad", "", "b", nil)
	c1 := s.Catalog()
	if c2 := s.Catalog(); c2 != c1 {
		t.Fatal("unchanged folders gave a new catalog")
	}
	if n := strings.Count(logs.String(), "description is required"); n != 1 {
		t.Fatalf("problem logged %d times", n)
	}
	file := filepath.Join(dir, FileName)
	if err := os.WriteFile(file, []byte("---\nname: notes\ndescription: Take better notes.\n---\nb"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Same size class edits within one timestamp tick are told apart by
	// size; make the time differ too so the test does not depend on it.
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	c3 := s.Catalog()
	if sk, _ := c3.Get("notes"); sk == nil || sk.Description != "Take better notes." {
		t.Fatalf("edit not seen: %+v", sk)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Catalog().Get("notes"); ok {
		t.Fatal("removed skill still listed")
	}
}

func TestCatalogRefusesSymlinks(t *testing.T) {
	s, ws, _, _ := newTestStore(t)
	outside := writeSkill(t, t.TempDir(), "elsewhere", "Outside.", "b", nil)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(ws, "linked")
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, FileName), filepath.Join(linked, FileName)); err != nil {
		t.Fatal(err)
	}
	c := s.Catalog()
	if len(c.Skills) != 0 || len(Errors(c.Problems)) != 2 {
		t.Fatalf("symlinked skills: %s %v", names(c), c.Problems)
	}
	if !errors.Is(c.Problems[0], ErrEscapes) || !errors.Is(c.Problems[1], ErrNotRegular) {
		t.Fatalf("problems %v", c.Problems)
	}
}

func TestUseAndReadSkillFile(t *testing.T) {
	s, ws, _, _ := newTestStore(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeSkill(t, ws, "pdf-forms", "Fill PDF forms.", "# Steps\nRun scripts/fill.sh.\n",
		map[string]string{"scripts/fill.sh": "#!/bin/sh\necho filled\n", "reference.md": "ref", ".git/config": "x"})
	if err := os.Symlink(secret, filepath.Join(dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("reference.md", filepath.Join(dir, "alias.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("x"), MaxResourceBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := s.use(ctx, UseArgs{Name: "pdf-forms"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Skill pdf-forms (workspace skill): 4 file(s)", "  scripts/fill.sh\n", "  reference.md\n", "  alias.md\n", "exec tool, from skills/pdf-forms/", "# Steps\nRun scripts/fill.sh."} {
		if !strings.Contains(out, want) {
			t.Errorf("use_skill output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "leak.txt") || strings.Contains(out, "hard.txt") || strings.Contains(out, ".git") {
		t.Errorf("use_skill lists what it must not:\n%s", out)
	}
	cases := []struct {
		path, want string
		is         error
	}{
		{"reference.md", "ref", nil},
		{"./scripts/fill.sh", "echo filled", nil},
		{"alias.md", "ref", nil},
		{"../../secret.txt", "", ErrEscapes},
		{secret, "", ErrEscapes},
		{"leak.txt", "", ErrEscapes},
		{"hard.txt", "", ErrEscapes},
		{"big.txt", "", ErrTooLarge},
		{"nosuch.md", "", ErrNotFound},
		{"scripts", "", ErrNotRegular},
		{"", "", ErrEscapes},
	}
	for _, c := range cases {
		got, err := s.read(ctx, ReadArgs{Name: "pdf-forms", Path: c.path})
		if c.is != nil {
			if !errors.Is(err, c.is) {
				t.Errorf("read %q: err = %v, want %v", c.path, err, c.is)
			}
			if err != nil && strings.Contains(err.Error(), filepath.Dir(secret)) {
				t.Errorf("read %q: error shows an outside path: %v", c.path, err)
			}
			continue
		}
		if err != nil || !strings.Contains(got, c.want) {
			t.Errorf("read %q = %q, %v", c.path, got, err)
		}
	}
	_, ps := s.Check()
	var leak bool
	for _, p := range ps {
		leak = leak || (errors.Is(p, ErrEscapes) && strings.HasSuffix(p.File, "leak.txt"))
	}
	if !leak {
		t.Fatalf("check did not report the escaping link: %v", ps)
	}
}

func TestPromptSectionHoldsNamesAndDescriptionsOnly(t *testing.T) {
	s, ws, _, _ := newTestStore(t)
	ctx := context.Background()
	if got := s.PromptSection(ctx, ""); got != "" {
		t.Fatalf("no skills: %q", got)
	}
	writeSkill(t, ws, "bake", "Bake\n  bread at home.", "SECRET BODY", nil)
	got := s.PromptSection(ctx, "")
	if !strings.Contains(got, "- bake: Bake bread at home.\n") || strings.Contains(got, "SECRET BODY") {
		t.Fatalf("section:\n%s", got)
	}
	for i := range 40 {
		writeSkill(t, ws, "s"+strings.Repeat("x", 3)+string(rune('a'+i%26))+strings.Repeat("y", i/26), strings.Repeat("d", 900), "b", nil)
	}
	got = s.PromptSection(ctx, "")
	if len(got) > MaxIndexBytes+200 || !strings.Contains(got, "more skills not listed") {
		t.Fatalf("section not bounded: %d bytes", len(got))
	}
}

func BenchmarkCatalogUnchanged(b *testing.B) {
	s, ws, _, _ := newTestStore(b)
	for i := range 20 {
		writeSkill(b, ws, "skill-"+string(rune('a'+i)), "Does thing number "+string(rune('a'+i))+".", "body", nil)
	}
	s.Catalog()
	b.ReportAllocs()
	for b.Loop() {
		s.PromptSection(context.Background(), "")
	}
}

// A skill folder swapped for a link after the catalog saw it (by a command
// exec ran in the workspace) is refused on read, not followed.
func TestReadRefusesAFolderSwappedForALink(t *testing.T) {
	s, ws, _, _ := newTestStore(t)
	dir := writeSkill(t, ws, "notes", "Take notes.", "b", map[string]string{"ref.md": "mine"})
	sk, ok := s.Catalog().Get("notes")
	if !ok {
		t.Fatal("skill not found")
	}
	outside := writeSkill(t, t.TempDir(), "notes", "Take notes.", "b", map[string]string{"ref.md": "SECRET"})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResource(sk, "ref.md")
	if !errors.Is(err, ErrEscapes) || strings.Contains(got, "SECRET") {
		t.Fatalf("read through a swapped folder = %q, %v", got, err)
	}
	if _, _, err := Resources(sk); !errors.Is(err, ErrEscapes) {
		t.Fatalf("list through a swapped folder: %v", err)
	}
	if _, err := s.read(context.Background(), ReadArgs{Name: "notes", Path: "ref.md"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the tool read a linked folder: %v", err)
	}
}
