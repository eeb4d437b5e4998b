// Package jsonl is the one appender and the one tail reader of Raven's
// append-only line logs (feedback, cron runs, ticks): a torn line never swallows the next record.
package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// ErrNewline is returned for a raw line that contains a newline: it would
// be read back as two records.
var ErrNewline = errors.New("jsonl: line contains a newline")

// DefaultPerm is the mode of a log file this package creates.
const DefaultPerm os.FileMode = 0o600

// maxWarned bounds the memory spent remembering which bad lines were
// already reported, so a long-lived process reading a damaged log warns
// once per line, not once per read.
const maxWarned = 1024

// File is one append-only log. Methods are safe for concurrent use, and
// any number of processes may append to the same path at once.
type File struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	warned map[string]struct{}
}

// New returns the log at path (created on first append). A nil logger
// discards the warnings about torn lines.
func New(path string, logger *slog.Logger) *File {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &File{path: path, log: logger}
}

// Path is the log's path.
func (f *File) Path() string { return f.path }

// Append encodes v as JSON and appends it as one line.
func (f *File) Append(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jsonl: encode record for %s: %w", f.path, err)
	}
	return AppendLine(f.path, line)
}

// AppendLine appends line and a newline to path in a single write(2) under
// O_APPEND, so lines from concurrent processes never interleave. When the
// file does not end in a newline — the previous append was cut short by a
// full disk or a crash, or the owner's editor left none — the write starts
// with one, so the torn line stays alone (readers skip it) instead of
// swallowing this record.
func AppendLine(path string, line []byte) error {
	return AppendLines(path, [][]byte{line}, AppendOptions{})
}

// AppendOptions tune AppendLines.
type AppendOptions struct {
	// Header is written before the lines when the file is empty (a
	// markdown log's title). It should end in a newline.
	Header []byte
	// Sync fsyncs the file before returning, for a caller that records
	// elsewhere that these lines are written.
	Sync bool
}

// AppendLines is AppendLine for several lines, written in the same single
// write. A line containing a newline is refused (ErrNewline), nothing written.
func AppendLines(path string, lines [][]byte, o AppendOptions) error {
	size := len(o.Header) + 1
	for _, line := range lines {
		if bytes.IndexByte(line, '\n') >= 0 {
			return fmt.Errorf("%w: %s", ErrNewline, path)
		}
		size += len(line) + 1
	}
	if len(lines) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("jsonl: mkdir for %s: %w", path, err)
	}
	// O_RDWR, not O_WRONLY: the last byte is read back to detect a torn tail.
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, DefaultPerm)
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	empty, torn, err := tailState(fh)
	if err != nil {
		fh.Close()
		return fmt.Errorf("jsonl: check tail of %s: %w", path, err)
	}
	buf := make([]byte, 0, size)
	switch {
	case torn:
		buf = append(buf, '\n')
	case empty:
		buf = append(buf, o.Header...)
	}
	for _, line := range lines {
		buf = append(buf, line...)
		buf = append(buf, '\n')
	}
	if _, err := fh.Write(buf); err != nil {
		fh.Close()
		return fmt.Errorf("jsonl: append to %s: %w", path, err)
	}
	if o.Sync {
		if err := fh.Sync(); err != nil {
			fh.Close()
			return fmt.Errorf("jsonl: fsync %s: %w", path, err)
		}
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("jsonl: close %s: %w", path, err)
	}
	return nil
}

// tailState reports whether the file is empty, and whether a non-empty
// file does not end in a newline.
func tailState(fh *os.File) (empty, torn bool, err error) {
	st, err := fh.Stat()
	if err != nil {
		return false, false, err
	}
	if st.Size() == 0 {
		return true, false, nil
	}
	var last [1]byte
	if _, err := fh.ReadAt(last[:], st.Size()-1); err != nil {
		return false, false, err
	}
	return false, last[0] != '\n', nil
}

// TrimTorn cuts a last line that has no newline — an append cut short by
// a crash — so the next append starts on a line of its own and the torn
// bytes are gone rather than kept as a bad record. The caller must be the
// only writer (it holds the log's lock). A missing file is fine.
func TrimTorn(path string) error {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	defer fh.Close()
	empty, torn, err := tailState(fh)
	if err != nil || empty || !torn {
		return err
	}
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("jsonl: stat %s: %w", path, err)
	}
	// Walk back to the last newline, a chunk at a time.
	end := st.Size()
	buf := make([]byte, min(int64(chunk), end))
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := fh.ReadAt(buf[:n], end-n); err != nil {
			return fmt.Errorf("jsonl: read %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if err := fh.Truncate(end); err != nil {
		return fmt.Errorf("jsonl: trim torn tail of %s: %w", path, err)
	}
	return nil
}
