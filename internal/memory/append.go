package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/raven-agent/raven/internal/statefile"
)

// ErrConcurrentEdit is matched by the error of an append that kept finding
// the file changed under it (the owner saving in an editor, which takes no
// lock) and gave up rather than overwrite the owner's save.
var ErrConcurrentEdit = errors.New("memory: file kept changing during the write")

// appendAttempts bounds the compare-and-swap retries against editors.
const appendAttempts = 5

// AppendToSection returns md with line added as the last line of the H2
// section heading, or with the section appended at the end when md has
// none. The result is always md with bytes inserted at one offset, at: every
// byte the owner wrote is kept, in order, on either side of the insertion.
// A line reading as a heading is escaped, so it never starts a section.
func AppendToSection(md, heading, line string) (out string, at int) {
	line = strings.TrimRight(line, "\n")
	if strings.HasPrefix(line, "#") {
		line = "\\" + line
	}
	_, _, at, found := section(md, heading)
	if !found {
		ins := ""
		if md != "" && !strings.HasSuffix(md, "\n\n") {
			if !strings.HasSuffix(md, "\n") {
				ins = "\n"
			}
			ins += "\n"
		}
		return md + ins + "## " + heading + "\n" + line + "\n", len(md)
	}
	ins := line + "\n"
	if at > 0 && md[at-1] != '\n' {
		ins = "\n" + ins
	}
	return md[:at] + ins + md[at:], at
}

// section locates the first H2 section named heading: its body runs from
// start to end, and its content ends at content, just past its last
// non-blank line (start when the section is empty).
func section(md, heading string) (start, end, content int, ok bool) {
	off := 0
	for _, l := range strings.SplitAfter(md, "\n") {
		isH2 := strings.HasPrefix(l, "## ")
		switch {
		case ok && isH2:
			return start, off, content, true
		case !ok && isH2 && strings.TrimSpace(l[3:]) == heading:
			ok, start = true, off+len(l)
			content = start
		case ok && strings.TrimSpace(l) != "":
			content = off + len(l)
		}
		off += len(l)
	}
	return start, len(md), content, ok
}

// SectionBody is the text under the first H2 section named heading: the
// one AppendToSection adds to.
func SectionBody(md, heading string) (string, bool) {
	start, end, _, ok := section(md, heading)
	if !ok {
		return "", false
	}
	return md[start:end], true
}

// AppendToSectionFile appends line to the H2 section heading of the file at
// path (AppendToSection), atomically and keeping the file's mode. It takes
// the same lock as UpdateSection, so Raven's writers serialise; an owner's
// editor takes none, so the file is re-read just before the rename and the
// write retried when it changed meanwhile. skip, when it returns true for
// the section's current body, leaves the file alone (the line is already
// there). The file is read whole under limit or not rewritten.
func AppendToSectionFile(ctx context.Context, path, heading, line string, limit int64, skip func(body string) bool) (written bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("memory: mkdir for %s: %w", path, err)
	}
	lock := statefile.NewLock(path + ".lock")
	if err := lock.Acquire(ctx); err != nil {
		return false, err
	}
	defer lock.Release()
	// An owner who keeps MEMORY.md in a notes vault links it into the
	// workspace: the rename goes to the link's target, keeping the link.
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	for range appendAttempts {
		old, err := ReadWhole(path, limit)
		if err != nil {
			return false, err
		}
		if body, ok := SectionBody(old, heading); ok && skip != nil && skip(body) {
			return false, nil
		}
		next, _ := AppendToSection(old, heading, line)
		if int64(len(next)) > limit {
			return false, &TooLargeError{Path: path, Size: int64(len(next)), Limit: limit}
		}
		// Compare-and-swap against an editor saving since the read above,
		// checked after the temp file's fsync: only the rename is left.
		err = writeIfUnchanged(path, next, old, limit)
		if errors.Is(err, errChanged) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("%w: %s (%d attempts)", ErrConcurrentEdit, path, appendAttempts)
}

// errChanged: the file is not what the write was computed from.
var errChanged = errors.New("memory: changed since read")

// writeIfUnchanged atomically replaces path with next, keeping its mode,
// unless its content is no longer old (errChanged; nothing is replaced).
func writeIfUnchanged(path, next, old string, limit int64) error {
	perm := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	tmp, err := statefile.CreateTemp(path)
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(next); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("memory: write %s: %w", path, err)
	}
	err = statefile.CommitTempIf(tmp, path, perm, func() error {
		now, err := ReadWhole(path, limit)
		if err != nil {
			return err
		}
		if now != old {
			return errChanged
		}
		return nil
	})
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
