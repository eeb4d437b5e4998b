package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestInstallCopiesAValidSkillAndRunsNothing(t *testing.T) {
	src := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	dir := writeSkill(t, src, "my-skill-main", "Does a thing.", "Run scripts/go.sh.\n",
		map[string]string{"scripts/go.sh": "#!/bin/sh\ntouch " + marker + "\n", "refs/a.md": "a", ".git/HEAD": "ref"})
	// The clone's folder name differs from the skill's: the copy takes the skill's.
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("---\nname: thing\ndescription: Does a thing.\nextra: 1\n---\nRun scripts/go.sh.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "scripts/go.sh"), 0o4755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	in, err := Install(dir, data)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(data, "skills", "thing")
	if in.Skill.Name != "thing" || in.Skill.Dir != dest || in.Files != 3 || len(in.Warnings) != 1 || in.Warnings[0].Line != 4 {
		t.Fatalf("installed %+v", in)
	}
	fi, err := os.Stat(filepath.Join(dest, "scripts/go.sh"))
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Mode()&os.ModeSetuid != 0 {
		t.Fatalf("script mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dest, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".git copied: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("installing ran the skill's script")
	}
	s := NewStore(Roots(filepath.Join(data, "workspace"), data), nil)
	if sk, ok := s.Catalog().Get("thing"); !ok || sk.Source != SourceData {
		t.Fatalf("installed skill not in the catalog: %+v", s.Catalog())
	}
	if _, err := Install(dir, data); !errors.Is(err, ErrExists) {
		t.Fatalf("second install: %v", err)
	}
}

func TestInstallRefuses(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		is    error
		text  string
	}{
		{"invalid front matter", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, FileName), []byte("---\nname: Bad Name\ndescription: d\n---\nb\n"), 0o644)
		}, ErrInvalid, "SKILL.md:2: error: name"},
		{"no SKILL.md", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, FileName)) }, ErrNotFound, "no file SKILL.md"},
		{"symlink inside", func(t *testing.T, dir string) {
			os.Symlink("/etc/passwd", filepath.Join(dir, "passwd"))
		}, ErrEscapes, "passwd is a symbolic link"},
		{"symlinked SKILL.md", func(t *testing.T, dir string) {
			other := filepath.Join(t.TempDir(), FileName)
			os.Rename(filepath.Join(dir, FileName), other)
			os.Symlink(other, filepath.Join(dir, FileName))
		}, ErrEscapes, "leaves the skill folder"},
		{"named pipe", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Skip(err)
			}
		}, ErrNotRegular, "pipe is a named pipe"},
		{"oversize", func(t *testing.T, dir string) {
			f, _ := os.Create(filepath.Join(dir, "huge.bin"))
			f.Truncate(MaxInstallBytes + 1) // sparse: no disk used
			f.Close()
		}, ErrTooLarge, "more than 32 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "ok-skill", "Fine.", "body", nil)
			c.setup(t, dir)
			data := t.TempDir()
			_, err := Install(dir, data)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err = %v, want %v containing %q", err, c.is, c.text)
			}
			left, _ := os.ReadDir(filepath.Join(data, "skills"))
			if len(left) != 0 {
				t.Fatalf("a refused install left %v", left)
			}
		})
	}
}
