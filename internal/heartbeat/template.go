package heartbeat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"
)

// Template is the HEARTBEAT.md that onboarding writes. A file holding only
// this (or any mix of headings, <!-- comments -->, blank lines, empty bullets
// and these placeholder bullets) has no tasks and costs no model call.
const Template = `# Heartbeat

<!--
Raven reads this file on every heartbeat (every 30 minutes by default) and
asks the model whether anything below needs doing now. While the file holds
only headings, comments and the placeholder lines, no model is called.

Write one task per line under "Tasks", for example:
- Every weekday around 8:00, tell me if it will rain in Berlin today.
- If a cron reminder went unanswered, remind me once more in the evening.
Delete a line when the task is no longer wanted.
-->

## Tasks

- (add a task here)

## Notes

- (context the heartbeat should know, e.g. your working hours)
`

// DefaultMaxFileBytes caps how much of HEARTBEAT.md is read.
const DefaultMaxFileBytes = 64 << 10

// HasTasks reports whether content holds anything beyond headings, HTML
// comments, blank lines, horizontal rules, empty bullets or checkboxes and
// the Template's placeholder bullets. It does not allocate.
func HasTasks(content []byte) bool {
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	inComment := false
	for len(content) > 0 {
		line := content
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = nil
		}
		// A line's visible text is what lies outside comments; each visible
		// segment is judged on its own.
		whole := true
		for len(line) > 0 {
			if inComment {
				end := bytes.Index(line, []byte("-->"))
				if end < 0 {
					line = nil
					break
				}
				line, inComment, whole = line[end+3:], false, false
				continue
			}
			start := bytes.Index(line, []byte("<!--"))
			seg := line
			if start >= 0 {
				seg, line, inComment, whole = line[:start], line[start+4:], true, false
			} else {
				line = nil
			}
			if !ignorable(bytes.TrimSpace(seg), whole) {
				return true
			}
		}
	}
	return false
}

// ignorable reports whether one trimmed visible segment carries no task.
// Placeholders only count when they are a whole line.
func ignorable(seg []byte, wholeLine bool) bool {
	if len(seg) == 0 {
		return true
	}
	if seg[0] == '#' {
		// "# Heading", "##", but not "#groceries buy milk".
		n := 0
		for n < len(seg) && seg[n] == '#' {
			n++
		}
		if n == len(seg) || seg[n] == ' ' || seg[n] == '\t' {
			return true
		}
	}
	// Horizontal rules and bare bullet markers: only -, *, _, + and spaces.
	if len(bytes.Trim(seg, "-*_+ \t")) == 0 {
		return true
	}
	// Empty bullets and checkboxes: "- [ ]", "* [x]", "1."
	rest := seg
	if rest[0] == '-' || rest[0] == '*' || rest[0] == '+' {
		rest = bytes.TrimSpace(rest[1:])
	} else if i := bytes.IndexByte(rest, '.'); i > 0 && i <= 3 && allDigits(rest[:i]) {
		rest = bytes.TrimSpace(rest[i+1:])
	}
	if len(rest) == 3 && rest[0] == '[' && rest[2] == ']' {
		return true
	}
	if len(rest) == 0 {
		return true
	}
	return wholeLine && isPlaceholder(seg)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isPlaceholder reports whether line is one of the Template's placeholder
// bullets, so an untouched onboarding file reads as empty.
func isPlaceholder(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("- (")) {
		return false
	}
	rest := Template
	for rest != "" {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		if strings.HasPrefix(l, "- (") && string(line) == l {
			return true
		}
	}
	return false
}

// FileState describes HEARTBEAT.md for status displays and the tick.
type FileState struct {
	Path    string `json:"path"`
	Present bool   `json:"present"`
	Bytes   int64  `json:"bytes"`
	// Active reports that the file holds tasks (HasTasks on the part read).
	Active bool `json:"active"`
	// Truncated reports that the file is larger than the read cap and only
	// its beginning was read.
	Truncated bool `json:"truncated"`
}

// ReadFile reads at most maxBytes of HEARTBEAT.md. A missing file is not an
// error (Present false). The content is cut at the last whole line within
// the cap and made valid UTF-8.
func ReadFile(path string, maxBytes int) (FileState, []byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	st := FileState{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil, nil
	}
	if err != nil {
		return st, nil, fmt.Errorf("heartbeat: open %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		if !fi.Mode().IsRegular() {
			return st, nil, fmt.Errorf("heartbeat: %s is not a regular file", path)
		}
		st.Bytes = fi.Size()
	}
	st.Present = true
	// Sized from Stat so a 64 KiB file is read without regrowing the buffer.
	var buf bytes.Buffer
	buf.Grow(int(min(max(st.Bytes, 0), int64(maxBytes))) + bytes.MinRead)
	_, err = buf.ReadFrom(io.LimitReader(f, int64(maxBytes)+1))
	data := buf.Bytes()
	if err != nil {
		return st, nil, fmt.Errorf("heartbeat: read %s: %w", path, err)
	}
	if len(data) > maxBytes {
		st.Truncated = true
		data = data[:maxBytes]
		if i := bytes.LastIndexByte(data, '\n'); i > 0 {
			data = data[:i+1]
		}
	}
	if !utf8.Valid(data) {
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	st.Active = HasTasks(data)
	return st, data, nil
}

// Inspect reports the state of HEARTBEAT.md without its content.
func Inspect(path string, maxBytes int) (FileState, error) {
	st, _, err := ReadFile(path, maxBytes)
	return st, err
}
