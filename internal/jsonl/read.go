package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// chunk is how much of the file's end Backward reads per step.
const chunk = 64 << 10

// Bounds of Decode's recovery of a record glued after torn bytes.
const (
	maxRecover = 1 << 20
	maxTries   = 64
)

// Backward calls fn with each non-blank line, last first, reading the file
// in chunks from its end: a caller that stops early (fn returns false)
// touches only the tail, whatever the file's size. maxBytes > 0 stops
// after that many bytes have been consumed. A missing file has no lines.
// line is only valid during the call.
func (f *File) Backward(maxBytes int64, fn func(line []byte) bool) error {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", f.path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("jsonl: stat %s: %w", f.path, err)
	}
	if err := backward(fh, st.Size(), maxBytes, fn); err != nil {
		return fmt.Errorf("jsonl: read %s: %w", f.path, err)
	}
	return nil
}

func backward(r io.ReaderAt, size, maxBytes int64, fn func(line []byte) bool) error {
	var (
		pos      = size
		consumed int64
		buf      = make([]byte, chunk)
		win      []byte // this chunk followed by the carry
		carry    []byte // the head of the previous window: a line's start is further back
		last     = true // the segment after the final newline has none of its own
	)
	yield := func(line []byte) (more bool) {
		consumed += int64(len(line))
		if !last {
			consumed++ // its newline
		}
		last = false
		if maxBytes > 0 && consumed > maxBytes {
			return false
		}
		if line = bytes.TrimSpace(line); len(line) == 0 {
			return true
		}
		return fn(line)
	}
	for pos > 0 {
		n := min(int64(chunk), pos)
		pos -= n
		if _, err := r.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		win = append(append(win[:0], buf[:n]...), carry...)
		data := win
		for {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				break
			}
			if !yield(data[i+1:]) {
				return nil
			}
			data = data[:i]
		}
		carry = append(carry[:0], data...)
		if maxBytes > 0 && consumed+int64(len(carry)) > maxBytes {
			return nil
		}
	}
	if len(carry) > 0 {
		yield(carry)
	}
	return nil
}

// Forward calls fn with each non-blank line, first to last, streaming the
// file; used by rewrites (trims) and audits that must see every line.
// line is only valid during the call.
func (f *File) Forward(fn func(line []byte) bool) error {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", f.path, err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, chunk)
	var long []byte // a line longer than the reader's buffer, reassembled
	for {
		part, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, part...)
			continue
		}
		line := part
		if len(long) > 0 {
			long = append(long, part...)
			line = long
		}
		if l := bytes.TrimSpace(line); len(l) > 0 && !fn(l) {
			return nil
		}
		long = long[:0]
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("jsonl: read %s: %w", f.path, err)
		}
	}
}

// Decode unmarshals one line into v. A line that does not decode is torn
// (an append cut short, or damaged): when a whole record was glued after
// the torn bytes by an older writer, that record is recovered; otherwise
// the line is skipped. Either way it is reported once, as a warning.
func (f *File) Decode(line []byte, v any) bool {
	if json.Unmarshal(line, v) == nil {
		return true
	}
	// Each try rescans the rest of the line: bound them, so a long line of
	// garbage costs little. A torn record is short and flat.
	tries := 0
	for i := 1; i < len(line) && len(line) <= maxRecover && tries < maxTries; i++ {
		j := bytes.IndexByte(line[i:], '{')
		if j < 0 {
			break
		}
		tries++
		i += j
		if json.Unmarshal(line[i:], v) == nil {
			f.warn(line, "jsonl: torn line: skipped its first bytes, kept the record glued after them", i)
			return true
		}
	}
	f.warn(line, "jsonl: torn or malformed line skipped", len(line))
	return false
}

func (f *File) warn(line []byte, msg string, dropped int) {
	key := string(line[:min(len(line), 96)]) + fmt.Sprint(len(line))
	f.mu.Lock()
	if f.warned == nil {
		f.warned = map[string]struct{}{}
	}
	_, seen := f.warned[key]
	if !seen {
		if len(f.warned) >= maxWarned {
			clear(f.warned)
		}
		f.warned[key] = struct{}{}
	}
	f.mu.Unlock()
	if seen {
		return
	}
	f.log.Warn(msg, "path", f.path, "dropped_bytes", dropped, "line_bytes", len(line),
		"start", string(line[:min(len(line), 60)]))
}

// Last returns up to n records that keep accepts (nil: all), oldest first,
// reading backwards only as far as needed.
func Last[T any](f *File, n int, keep func(*T) bool) ([]T, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []T // newest first
	err := f.Backward(0, func(line []byte) bool {
		var rec T
		if !f.Decode(line, &rec) || (keep != nil && !keep(&rec)) {
			return true
		}
		out = append(out, rec)
		return len(out) < n
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}
