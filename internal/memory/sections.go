package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/raven-agent/raven/internal/statefile"
)

// Sections splits markdown into its H2 sections, keyed by heading text.
// Text before the first H2 is under the key "".
func Sections(md string) map[string]string {
	out := map[string]string{}
	cur := ""
	var b strings.Builder
	for _, line := range strings.SplitAfter(md, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			out[cur] = b.String()
			b.Reset()
			cur = strings.TrimSpace(h)
			continue
		}
		b.WriteString(line)
	}
	out[cur] = b.String()
	return out
}

// SelectSections renders the named H2 sections of md, in the given order,
// skipping absent ones.
func SelectSections(md string, names []string) string {
	secs := Sections(md)
	var b strings.Builder
	for _, n := range names {
		body, ok := secs[n]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "## %s\n%s", n, strings.TrimLeft(body, "\n"))
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// SpliceSection replaces (or appends) the H2 section heading in md with body,
// leaving every other section byte-for-byte as the owner wrote it.
func SpliceSection(md, heading, body string) string {
	// A body line that reads as an H2 would end the section there on the
	// next splice, leaving the rest of the body outside it as if the owner
	// had written it; escaped, it renders the same.
	body = strings.ReplaceAll("\n"+strings.TrimRight(body, "\n"), "\n## ", "\n\\## ")[1:] + "\n"
	lines := strings.SplitAfter(md, "\n")
	var out strings.Builder
	i, found := 0, false
	for i < len(lines) {
		line := lines[i]
		if strings.TrimSpace(strings.TrimPrefix(line, "## ")) == heading && strings.HasPrefix(line, "## ") {
			found = true
			out.WriteString("## " + heading + "\n" + body)
			i++
			for i < len(lines) && !strings.HasPrefix(lines[i], "## ") {
				i++
			}
			if i < len(lines) {
				out.WriteString("\n")
			}
			continue
		}
		out.WriteString(line)
		i++
	}
	if !found {
		s := out.String()
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			if !strings.HasSuffix(s, "\n") {
				s += "\n"
			}
			s += "\n"
		}
		return s + "## " + heading + "\n" + body
	}
	return out.String()
}

// UpdateSection splices one section of the file at path under an exclusive
// lock, writing atomically, and skips the write when nothing changed. The
// file is read whole or not rewritten at all: one longer than limit (or
// that the splice would push past it) fails with a *TooLargeError and keeps
// every byte. A rewrite keeps the file's mode.
func UpdateSection(ctx context.Context, path, heading, body string, limit int64) (changed bool, err error) {
	lock := statefile.NewLock(path + ".lock")
	if err := lock.Acquire(ctx); err != nil {
		return false, err
	}
	defer lock.Release()
	old, err := ReadWhole(path, limit)
	if err != nil {
		return false, err
	}
	next := SpliceSection(old, heading, body)
	if next == old {
		return false, nil
	}
	if int64(len(next)) > limit {
		return false, &TooLargeError{Path: path, Size: int64(len(next)), Limit: limit}
	}
	if err := statefile.WriteAtomicKeepMode(path, []byte(next), 0o600); err != nil {
		return false, err
	}
	return true, nil
}
