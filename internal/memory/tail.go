// Package memory reads and writes the owner-editable memory files: MEMORY.md,
// the append-only HISTORY.md (read by tail, never whole) and user_memory/*.md sections.
package memory

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/jsonl"
)

// ReadTail is TailBytes as a string.
func ReadTail(path string, maxBytes int) (string, error) {
	b, err := TailBytes(path, maxBytes)
	return string(b), err
}

// ReadBounded reads an owner-edited file up to maxBytes (cut on a rune
// boundary). A missing file yields "".
func ReadBounded(path string, maxBytes int64) (string, error) {
	b, err := HeadBytes(path, int(maxBytes))
	return string(b), err
}

// TailBytes returns at most n bytes from the end of path, starting at a line
// boundary when the file is longer than n (jsonl.TailBytes: the one tail
// reader). A missing file is an empty tail.
func TailBytes(path string, n int) ([]byte, error) {
	b, err := jsonl.TailBytes(path, n)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return b, nil
}

// HeadBytes returns at most n bytes from the start of path (cut at a rune
// boundary). A missing file is empty.
func HeadBytes(path string, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("memory: read %s: %w", path, err)
	}
	buf = buf[:m]
	if m == n {
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					buf = buf[:i]
				}
				break
			}
		}
	}
	return buf, nil
}
