package feedback

import (
	"bytes"
	"io"
	"os"
)

const tailChunk = 64 << 10

// reverseLines calls fn with each line of f from the last to the first,
// reading fixed-size chunks from the end so a caller that stops early
// touches only the tail. fn returns false to stop. Lines are only valid
// during the call.
func reverseLines(f *os.File, fn func(line []byte) bool) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pos := st.Size()
	var carry []byte // partial line continuing into the next (later) chunk
	buf := make([]byte, tailChunk)
	for pos > 0 {
		n := int64(tailChunk)
		if pos < n {
			n = pos
		}
		pos -= n
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, pos); err != nil && err != io.EOF {
			return err
		}
		data := append(chunk, carry...)
		for {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				break
			}
			if line := bytes.TrimSpace(data[i+1:]); len(line) > 0 {
				if !fn(line) {
					return nil
				}
			}
			data = data[:i]
		}
		carry = append([]byte(nil), data...)
	}
	if line := bytes.TrimSpace(carry); len(line) > 0 {
		fn(line)
	}
	return nil
}
