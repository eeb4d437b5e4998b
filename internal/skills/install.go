package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Installed is what Install copied.
type Installed struct {
	Skill    *Skill
	Files    int
	Bytes    int64
	Warnings []Problem
}

// Install validates the skill folder src and copies it to
// <dataDir>/skills/<name>. Nothing in it is run: it is read and copied.
// Symbolic links, devices, pipes and sockets are refused, as is a folder
// over MaxInstallFiles or MaxInstallBytes, and an existing skill of the
// same name is never overwritten. The copy is made beside the target and
// renamed into place, so a failed install leaves nothing half-copied.
func Install(src, dataDir string) (*Installed, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("skills: install %s: %s", src, errText(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("skills: install %s: %w: want a skill folder (with a %s)", src, ErrNotRegular, FileName)
	}
	// src is the folder the owner named: opened as given, links and all.
	srcRoot, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("skills: install %s: %s", src, errText(err))
	}
	data, err := readBounded(srcRoot, FileName, MaxSkillFileBytes)
	srcRoot.Close()
	if err != nil {
		return nil, fmt.Errorf("skills: install %s: %w", src, err)
	}
	// The copy is named after the skill, so the source folder's own name
	// (a clone's "my-skill-main") need not match.
	p := Parse(filepath.Join(src, FileName), "", data)
	if p.Skill == nil {
		errs := Errors(p.Problems)
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return nil, fmt.Errorf("skills: install %s: not a valid skill:\n%w", src, errors.Join(joined...))
	}
	name := p.Skill.Name
	plan, total, err := planCopy(src)
	if err != nil {
		return nil, fmt.Errorf("skills: install %s: %w", src, err)
	}
	base := InstallDir(dataDir)
	dest := filepath.Join(base, name)
	if _, err := os.Lstat(dest); err == nil {
		return nil, fmt.Errorf("%w: %s (remove that folder first to reinstall)", ErrExists, dest)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("skills: install: %w", err)
	}
	// A dot name: the catalog skips it while the copy is in progress.
	tmp, err := os.MkdirTemp(base, ".install-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("skills: install: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := copyPlan(src, tmp, plan); err != nil {
		return nil, fmt.Errorf("skills: install %s: %w", src, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, fmt.Errorf("skills: install: %w", err)
	}
	done = true
	sk := p.Skill
	sk.Source, sk.Dir, sk.File = SourceData, dest, filepath.Join(dest, FileName)
	var warns []Problem
	for _, w := range p.Problems {
		if w.Severity == SeverityWarning {
			warns = append(warns, w)
		}
	}
	return &Installed{Skill: sk, Files: len(plan.files), Bytes: total, Warnings: warns}, nil
}

type copyList struct {
	dirs  []string
	files []copyFile
}

type copyFile struct {
	rel  string
	mode fs.FileMode
	size int64
}

// planCopy walks src without following links and lists what to copy, or
// refuses the folder.
func planCopy(src string) (copyList, int64, error) {
	var plan copyList
	var total int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %s", p, errText(err))
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		t := d.Type()
		switch {
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s is a symbolic link; a skill to install holds only files and folders", ErrEscapes, rel)
		case d.IsDir():
			plan.dirs = append(plan.dirs, rel)
			return nil
		case !t.IsRegular():
			return fmt.Errorf("%w: %s is a %s; a skill to install holds only files and folders", ErrNotRegular, rel, kindOf(t))
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("read %s: %s", rel, errText(err))
		}
		total += fi.Size()
		if len(plan.files) >= MaxInstallFiles {
			return fmt.Errorf("%w: more than %d files", ErrTooLarge, MaxInstallFiles)
		}
		if total > MaxInstallBytes {
			return fmt.Errorf("%w: more than %d MiB", ErrTooLarge, MaxInstallBytes>>20)
		}
		plan.files = append(plan.files, copyFile{rel: rel, mode: fi.Mode(), size: fi.Size()})
		return nil
	})
	return plan, total, err
}

func kindOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// copyPlan copies plan from src to dst, reading through an os.Root on src
// so a link swapped in after the walk still cannot reach outside, and
// refusing a file that is no longer the regular file of the plan size.
func copyPlan(src, dst string, plan copyList) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	for _, d := range plan.dirs {
		if err := to.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %s", d, errText(err))
		}
	}
	for _, f := range plan.files {
		if err := copyOne(from, to, f); err != nil {
			return err
		}
	}
	return nil
}

func copyOne(from, to *os.Root, f copyFile) error {
	in, err := from.Open(f.rel)
	if err != nil {
		return rootErr(f.rel, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.size {
		return fmt.Errorf("%w: %s changed while it was being installed", ErrNotRegular, f.rel)
	}
	// The owner's alone, executable if the source was, never
	// setuid/setgid: a script stays runnable through exec, and no more.
	perm := fs.FileMode(0o600)
	if f.mode.Perm()&0o111 != 0 {
		perm = 0o700
	}
	out, err := to.OpenFile(f.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create %s: %s", f.rel, errText(err))
	}
	if _, err := io.Copy(out, io.LimitReader(in, f.size)); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %s", f.rel, errText(err))
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %s", f.rel, errText(err))
	}
	return out.Close()
}
