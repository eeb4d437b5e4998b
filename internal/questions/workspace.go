package questions

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WorkspaceID is the canonical identity of a working directory: its real
// path plus device and inode, so a directory deleted and re-created at the
// same path (or a symlink re-pointed) is a different workspace.
type WorkspaceID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// IsZero reports whether no workspace is bound.
func (w WorkspaceID) IsZero() bool { return w.Path == "" }

// IdentifyWorkspace resolves dir to its canonical identity. dir must be an
// existing local directory.
func IdentifyWorkspace(dir string) (WorkspaceID, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return WorkspaceID{}, fmt.Errorf("questions: workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return WorkspaceID{}, fmt.Errorf("questions: workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return WorkspaceID{}, fmt.Errorf("questions: workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return WorkspaceID{}, fmt.Errorf("questions: workspace %s: not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return WorkspaceID{}, fmt.Errorf("questions: workspace %s: no device/inode on this platform", dir)
	}
	return WorkspaceID{Path: real, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil //nolint:unconvert // types differ per platform
}

// Verify re-identifies w.Path and reports whether it is still the same
// directory. Any failure counts as replaced.
func (w WorkspaceID) Verify() error {
	if w.IsZero() {
		return fmt.Errorf("questions: no workspace bound")
	}
	now, err := IdentifyWorkspace(w.Path)
	if err != nil {
		return err
	}
	if now != w {
		return fmt.Errorf("questions: workspace %s was replaced", w.Path)
	}
	return nil
}
