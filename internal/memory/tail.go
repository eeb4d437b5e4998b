// Package memory reads and writes the owner-editable memory files: MEMORY.md,
// the append-only HISTORY.md (read by tail, never whole) and user_memory/*.md sections.
package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadTail returns at most maxBytes from the end of the file at path,
// starting at a line boundary. It seeks from the end, so its cost does not
// grow with the file's size. A missing file yields "".
func ReadTail(path string, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: tail %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("memory: tail %s: %w", path, err)
	}
	size := st.Size()
	start := size - int64(maxBytes)
	if start < 0 {
		start = 0
	}
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("memory: tail %s: %w", path, err)
	}
	if start > 0 {
		// Drop the partial first line so the tail starts cleanly.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return string(buf), nil
}

// ReadBounded reads a whole owner-edited file up to maxBytes; longer files
// are truncated at maxBytes. A missing file yields "".
func ReadBounded(path string, maxBytes int64) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes))
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", path, err)
	}
	return string(b), nil
}
