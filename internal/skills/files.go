package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Resources lists the files of a skill folder besides SKILL.md, as slash
// paths inside it, sorted; problems are links that leave the folder and a
// list cut at MaxResources. Hidden entries (.git) are skipped.
func Resources(sk *Skill) ([]string, []Problem, error) {
	root, err := openSkillDir(sk.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("skill %s: %w", sk.Name, err)
	}
	defer root.Close()
	var files []string
	var problems []Problem
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, Problem{File: filepath.Join(sk.Dir, p), Severity: SeverityWarning, Err: err, Message: "unreadable: " + errText(err)})
			return nil
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || p == FileName {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Followed only while it stays inside: os.Root refuses the rest.
			fi, err := root.Stat(p)
			if err != nil {
				problems = append(problems, Problem{File: filepath.Join(sk.Dir, p), Severity: SeverityError, Err: ErrEscapes,
					Message: "symbolic link leaves the skill folder (or is broken); read_skill_file refuses it"})
				return nil
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		} else if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				problems = append(problems, Problem{File: filepath.Join(sk.Dir, p), Severity: SeverityError, Err: ErrEscapes,
					Message: "file has more than one hard link (one may be outside the folder); read_skill_file refuses it"})
				return nil
			}
		}
		if len(files) == MaxResources {
			problems = append(problems, Problem{File: sk.Dir, Severity: SeverityWarning, Err: ErrTooLarge,
				Message: fmt.Sprintf("more than %d files; use_skill lists the first %d", MaxResources, MaxResources)})
			return fs.SkipAll
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return files, problems, fmt.Errorf("skill %s: list files: %s", sk.Name, errText(err))
	}
	return files, problems, nil
}

// ReadResource reads one file of a skill folder: rel is a slash path inside
// it. The read goes through an os.Root on the folder, so neither "..",
// an absolute path nor a symbolic link can leave it; errors name rel only.
func ReadResource(sk *Skill, rel string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(rel, "./"))
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: an absolute path; give one inside skill %s, as use_skill listed it", ErrEscapes, sk.Name)
	}
	if rel == "" || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", fmt.Errorf("%w: %q is not a path inside skill %s", ErrEscapes, rel, sk.Name)
	}
	root, err := openSkillDir(sk.Dir)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", sk.Name, err)
	}
	defer root.Close()
	b, err := readBounded(root, filepath.FromSlash(clean), MaxResourceBytes)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return "", fmt.Errorf("skill %s: %w (read_skill_file returns text files up to %d KiB)", sk.Name, err, MaxResourceBytes>>10)
		}
		return "", fmt.Errorf("skill %s: %w", sk.Name, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("skill %s: %s is not text (read_skill_file returns UTF-8 text only)", sk.Name, clean)
	}
	return string(b), nil
}
