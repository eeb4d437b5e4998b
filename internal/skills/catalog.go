package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Root is one directory of skill folders.
type Root struct {
	Dir    string
	Source Source
}

// Roots are Raven's two skill directories, workspace first so it wins a
// name clash: <workspace>/skills is where the owner (or the agent, with
// write_file) drafts a skill; <data dir>/skills is where installed ones go.
func Roots(workspace, dataDir string) []Root {
	return []Root{
		{Dir: filepath.Join(workspace, "skills"), Source: SourceWorkspace},
		{Dir: filepath.Join(dataDir, "skills"), Source: SourceData},
	}
}

// InstallDir is the directory `raven skills install` copies into.
func InstallDir(dataDir string) string { return filepath.Join(dataDir, "skills") }

// Catalog is the skills found at one moment, valid ones by name, with every
// problem met on the way. It is never modified once returned.
type Catalog struct {
	Skills   []*Skill
	Problems []Problem
	byName   map[string]*Skill
}

// Get returns the skill called name.
func (c *Catalog) Get(name string) (*Skill, bool) {
	s, ok := c.byName[name]
	return s, ok
}

// Store discovers skills and caches each SKILL.md by its file identity and
// modification time, so the per-turn look costs a directory read and a stat
// per skill, not a parse.
type Store struct {
	roots []Root
	log   *slog.Logger

	mu    sync.Mutex
	cache map[string]cached
	last  *Catalog
	// reported is the problem list last logged, so a broken skill is
	// logged when it breaks, not on every turn.
	reported string
}

type cached struct {
	info   fs.FileInfo
	parsed Parsed // Body dropped: it is read fresh when used
}

// NewStore returns a store over roots (see Roots); log may be nil.
func NewStore(roots []Root, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{roots: roots, log: log, cache: map[string]cached{}}
}

// Catalog looks at the skill directories now. A SKILL.md unchanged since
// the last look is not read again; when nothing changed the previous
// catalog is returned as is.
func (s *Store) Catalog() *Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Catalog{byName: map[string]*Skill{}}
	where := map[string]string{}
	changed := s.last == nil
	live := make(map[string]bool, len(s.cache))
	for _, root := range s.roots {
		entries, err := os.ReadDir(root.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			c.Problems = append(c.Problems, Problem{File: root.Dir, Severity: SeverityError, Err: err, Message: "cannot list the skills folder: " + errText(err)})
			continue
		}
		count := 0
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(root.Dir, e.Name())
			file := filepath.Join(dir, FileName)
			if e.Type()&fs.ModeSymlink != 0 {
				c.Problems = append(c.Problems, Problem{File: dir, Severity: SeverityError, Err: ErrEscapes,
					Message: "the skill folder is a symbolic link, which Raven does not follow; copy it in with `raven skills install DIR`"})
				continue
			}
			if !e.IsDir() {
				continue
			}
			if count++; count > MaxSkills {
				c.Problems = append(c.Problems, Problem{File: root.Dir, Severity: SeverityError, Err: ErrTooLarge,
					Message: fmt.Sprintf("more than %d skill folders; the rest are ignored", MaxSkills)})
				break
			}
			p, fresh := s.load(file, e.Name(), root.Source)
			changed = changed || fresh
			live[file] = true
			c.Problems = append(c.Problems, p.Problems...)
			sk := p.Skill
			if sk == nil {
				continue
			}
			if prev, taken := where[sk.Name]; taken {
				c.Problems = append(c.Problems, Problem{File: file, Severity: SeverityWarning, Err: ErrNameClash,
					Message: fmt.Sprintf("skill %q is also in %s, which is the one used", sk.Name, prev)})
				continue
			}
			where[sk.Name] = sk.File
			c.byName[sk.Name] = sk
			c.Skills = append(c.Skills, sk)
		}
	}
	for f := range s.cache {
		if !live[f] {
			delete(s.cache, f)
			changed = true
		}
	}
	sortProblems(c.Problems)
	if !changed && sameProblems(s.last.Problems, c.Problems) && len(s.last.Skills) == len(c.Skills) {
		return s.last
	}
	slices.SortFunc(c.Skills, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	s.last = c
	s.report(c.Problems)
	return c
}

// recent is the last catalog looked at, or a fresh look when there is none.
func (s *Store) recent() *Catalog {
	s.mu.Lock()
	c := s.last
	s.mu.Unlock()
	if c == nil {
		return s.Catalog()
	}
	return c
}

// load returns SKILL.md's parse, from the cache when the file is the same
// file with the same size and time; fresh says it was read.
func (s *Store) load(file, dirName string, src Source) (Parsed, bool) {
	fail := func(kind error, msg string) Parsed {
		return Parsed{Problems: []Problem{{File: file, Severity: SeverityError, Err: kind, Message: msg}}}
	}
	fi, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		delete(s.cache, file)
		return Parsed{Problems: []Problem{{File: filepath.Dir(file), Severity: SeverityWarning, Err: ErrNotFound,
			Message: "folder has no " + FileName + " and is not a skill"}}}, false
	}
	if err != nil {
		return fail(err, "cannot read: "+errText(err)), true
	}
	if !fi.Mode().IsRegular() {
		return fail(ErrNotRegular, FileName+" must be a regular file (not a link or device)"), true
	}
	if c, ok := s.cache[file]; ok && os.SameFile(c.info, fi) && c.info.ModTime().Equal(fi.ModTime()) && c.info.Size() == fi.Size() {
		return c.parsed, false
	}
	data, err := readSkillFile(filepath.Dir(file))
	var p Parsed
	if err != nil {
		p = fail(err, errText(err))
	} else {
		p = Parse(file, dirName, data)
	}
	if p.Skill != nil {
		p.Skill.Source = src
		p.Skill.Dir = filepath.Dir(file)
	}
	p.Body = ""
	s.cache[file] = cached{info: fi, parsed: p}
	return p, true
}

// Load reads the named skill's SKILL.md now, body included, from the
// current catalog.
func (s *Store) Load(name string) (*Skill, string, error) {
	sk, ok := s.Catalog().Get(name)
	if !ok {
		return nil, "", fmt.Errorf("%w %q", ErrNotFound, name)
	}
	data, err := readSkillFile(sk.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("skill %s: %w", name, err)
	}
	p := Parse(sk.File, filepath.Base(sk.Dir), data)
	if p.Skill == nil {
		return nil, "", fmt.Errorf("skill %s: %w", name, Errors(p.Problems)[0])
	}
	p.Skill.Source, p.Skill.Dir = sk.Source, sk.Dir
	return p.Skill, p.Body, nil
}

// readSkillFile reads dir/SKILL.md, bounded, through openSkillDir.
func readSkillFile(dir string) ([]byte, error) {
	root, err := openSkillDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readBounded(root, FileName, MaxSkillFileBytes)
}

// openSkillDir opens a skill folder as an os.Root, through an os.Root on
// its parent: a folder swapped for a link to elsewhere after the catalog
// looked (by a command exec ran in the workspace) is refused, not followed.
func openSkillDir(dir string) (*os.Root, error) {
	parent, err := os.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("open skills folder: %s", errText(err))
	}
	defer parent.Close()
	root, err := parent.OpenRoot(filepath.Base(dir))
	if err != nil {
		return nil, fmt.Errorf("open skill folder: %w", rootErr(filepath.Base(dir), err))
	}
	return root, nil
}

// readBounded reads name beneath root: a regular file with one link, at
// most limit bytes. Errors name the path inside the root only.
func readBounded(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, rootErr(name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, rootErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, name)
	}
	// os.Root cannot see a hard link's other names; a link to a file
	// outside the folder would read as one inside. Checked on the open
	// descriptor so nothing can be swapped in between.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, fmt.Errorf("%w: %s has %d hard links and one may be outside", ErrEscapes, name, st.Nlink)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes; the limit is %d", ErrTooLarge, name, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, rootErr(name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, name, limit)
	}
	return b, nil
}

// errRootEscape is os.Root's own (unexported) refusal of a path that
// leaves it.
const errRootEscape = "path escapes from parent"

// rootErr says what went wrong with name without the absolute path an
// *os.PathError carries.
func rootErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case err.Error() == errRootEscape:
		return fmt.Errorf("%w: %s (through a link that leaves the skill folder)", ErrEscapes, name)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: no file %s in the skill folder", ErrNotFound, name)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// errText is err without a *fs.PathError's path, for messages that already
// name the file.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// sortProblems orders problems by file, then line: the order of a
// compiler's, which editors jump through.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
}

func sameProblems(a, b []Problem) bool {
	return slices.EqualFunc(a, b, func(x, y Problem) bool { return x.String() == y.String() })
}

// report logs the problems once per change.
func (s *Store) report(ps []Problem) {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	if b.String() == s.reported {
		return
	}
	s.reported = b.String()
	for _, p := range ps {
		lvl := slog.LevelWarn
		if p.Severity == SeverityError {
			lvl = slog.LevelError
		}
		s.log.Log(context.Background(), lvl, "skill problem", "file", p.File, "line", p.Line, "problem", p.Message)
	}
}

// Check is every problem of the skill directories: the catalog's, plus
// each valid skill's files (links that leave the folder). `raven skills
// check` prints them.
func (s *Store) Check() (*Catalog, []Problem) {
	c := s.Catalog()
	ps := slices.Clone(c.Problems)
	for _, sk := range c.Skills {
		_, more, err := Resources(sk)
		ps = append(ps, more...)
		if err != nil {
			ps = append(ps, Problem{File: sk.Dir, Severity: SeverityError, Err: err, Message: err.Error()})
		}
	}
	sortProblems(ps)
	return c, ps
}
