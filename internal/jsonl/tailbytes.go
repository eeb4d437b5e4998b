package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// TailBytes returns at most n bytes from the end of path, starting at a line
// boundary when the file is longer than n: the byte-budgeted tail of a line
// log read as text (HISTORY.md into a prompt). It is one pread from the
// end, so the cost is independent of the file's size. A missing file is an
// empty tail.
func TailBytes(path string, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("jsonl: stat %s: %w", path, err)
	}
	size := st.Size()
	off := max(size-int64(n), 0)
	buf := make([]byte, size-off)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("jsonl: read tail of %s: %w", path, err)
	}
	buf = buf[:m]
	if off > 0 {
		// Drop the partial first line; with no newline at all keep the
		// bytes but start on a rune boundary.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			for len(buf) > 0 && !utf8.RuneStart(buf[0]) {
				buf = buf[1:]
			}
		}
	}
	return buf, nil
}
