// Package statefile provides the on-disk primitives shared by every file that
// several Raven processes read and write: flock(2) locks, atomic replace, and
// moving a corrupt file aside instead of silently resetting it.
package statefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// WriteAtomic replaces path with data so that readers see either the old or
// the new content, never a torn write: write a temp file in the same
// directory, fsync it, rename it over path, then fsync the directory. The
// file gets perm whatever it had before: use it for Raven's own state.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm)
}

// WriteAtomicKeepMode is WriteAtomic for a file the owner may have
// chmod-ed (attention.md, MEMORY.md): an existing file keeps its
// permission bits; a new one gets perm.
func WriteAtomicKeepMode(path string, data []byte, perm os.FileMode) error {
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("statefile: stat %s: %w", path, err)
	}
	return writeAtomic(path, data, perm)
}

func writeAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := CreateTemp(path)
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("statefile: write %s: %w", path, err) // err names the temp file
	}
	if err := CommitTemp(tmp, path, perm); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// CreateTemp creates the temp file a rewrite of path is written to, in
// path's directory, named ".<base>.tmp-<pid>-<random>" so SweepTemp can
// tell a leftover of a dead writer from a rewrite in progress.
func CreateTemp(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("statefile: mkdir %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempInfix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("statefile: create temp for %s: %w", path, err)
	}
	return tmp, nil
}

// CommitTemp gives tmp perm, fsyncs and closes it, renames it over path and
// fsyncs the directory. On error tmp is closed but not removed.
func CommitTemp(tmp *os.File, path string, perm os.FileMode) error {
	return CommitTempIf(tmp, path, perm, nil)
}

// CommitTempIf is CommitTemp with a last check between the fsync and the
// rename: when check fails, tmp is closed (not removed, not renamed) and
// check's error returned. A compare-and-swap against a writer that takes no
// lock (the owner's editor) checks there, so only the rename is left
// between its look at path and the replace.
func CommitTempIf(tmp *os.File, path string, perm os.FileMode, check func() error) error {
	name := tmp.Name()
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("statefile: chmod %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("statefile: fsync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("statefile: close %s: %w", name, err)
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("statefile: rename %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// MoveAside renames a corrupt file to "<path>.corrupt-<UTC timestamp>" so
// its content is kept for the owner to inspect, and returns the new name.
func MoveAside(path string, now time.Time) (string, error) {
	dst := AsideName(path, now)
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("statefile: move aside %s: %w", path, err)
	}
	return dst, nil
}

// AsideName is the name MoveAside gives path at now.
func AsideName(path string, now time.Time) string {
	return fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
}
