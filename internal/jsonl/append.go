// Package jsonl is the one appender and the one tail reader of Raven's
// append-only line logs (feedback, cron runs, ticks): a torn line never swallows the next record.
package jsonl

import (
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
// full disk or a crash — the write starts with one, so the torn line stays
// alone (readers skip it) instead of swallowing this record.
func AppendLine(path string, line []byte) error {
	for _, c := range line {
		if c == '\n' {
			return fmt.Errorf("%w: %s", ErrNewline, path)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("jsonl: mkdir for %s: %w", path, err)
	}
	// O_RDWR, not O_WRONLY: the last byte is read back to detect a torn tail.
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, DefaultPerm)
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	buf := make([]byte, 0, len(line)+2)
	torn, err := endsTorn(fh)
	if err != nil {
		fh.Close()
		return fmt.Errorf("jsonl: check tail of %s: %w", path, err)
	}
	if torn {
		buf = append(buf, '\n')
	}
	buf = append(buf, line...)
	buf = append(buf, '\n')
	if _, err := fh.Write(buf); err != nil {
		fh.Close()
		return fmt.Errorf("jsonl: append to %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("jsonl: close %s: %w", path, err)
	}
	return nil
}

// endsTorn reports whether the non-empty file does not end in a newline.
func endsTorn(fh *os.File) (bool, error) {
	st, err := fh.Stat()
	if err != nil {
		return false, err
	}
	if st.Size() == 0 {
		return false, nil
	}
	var last [1]byte
	if _, err := fh.ReadAt(last[:], st.Size()-1); err != nil {
		return false, err
	}
	return last[0] != '\n', nil
}
