package memory

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is matched by the error for a file bigger than the limit it
// must be read whole under before a rewrite.
var ErrTooLarge = errors.New("memory: file too large to rewrite safely")

// TooLargeError says which file, how big, and the limit. The file is left
// untouched: rewriting what was not read whole would drop its end.
type TooLargeError struct {
	Path        string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("memory: %s is %d bytes, over the %d-byte limit for an automatic rewrite; it is left untouched — shorten it to update it again",
		e.Path, e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadWhole reads all of path, or fails with a *TooLargeError when it is
// longer than limit. It is the read before a rewrite: unlike ReadBounded it
// never returns a prefix. A missing file is "".
func ReadWhole(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("memory: stat %s: %w", path, err)
	}
	if st.Size() > limit {
		return "", &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	// Read one byte past the limit: the file may have grown since the stat.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return "", &TooLargeError{Path: path, Size: int64(len(b)), Limit: limit}
	}
	return string(b), nil
}
