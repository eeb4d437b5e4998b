// Package statefile provides the on-disk primitives shared by every file that
// several Raven processes read and write: flock(2) locks, atomic replace, and
// moving a corrupt file aside instead of silently resetting it.
package statefile

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteAtomic replaces path with data so that readers see either the old or
// the new content, never a torn write: write a temp file in the same
// directory, fsync it, rename it over path, then fsync the directory.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("statefile: mkdir %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("statefile: create temp for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("statefile: write %s: %w", tmpName, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("statefile: chmod %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("statefile: fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("statefile: close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("statefile: rename %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// MoveAside renames a corrupt file to "<path>.corrupt-<UTC timestamp>" so
// its content is kept for the owner to inspect, and returns the new name.
func MoveAside(path string, now time.Time) (string, error) {
	dst := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("statefile: move aside %s: %w", path, err)
	}
	return dst, nil
}
