package questions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Workspace verification failures. ErrWorkspaceUnknown means the identity
// cannot be established (no birth time on this filesystem, a failed check):
// nothing may be concluded, so an answer bound to it is refused.
var (
	ErrWorkspaceReplaced = errors.New("workspace replaced")
	ErrWorkspaceUnknown  = errors.New("workspace identity unknown")
)

// WorkspaceID is the canonical identity of a working directory: its real
// path, device and inode, and its birth time. The birth time is what a
// directory deleted and re-created at the same path cannot share even when
// the filesystem hands it the same inode (ext4 does, right after rm -rf).
type WorkspaceID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// BirthNs is the directory's birth time in Unix nanoseconds; 0 when the
	// filesystem or platform does not report one (the identity is then
	// unknown, never assumed).
	BirthNs int64 `json:"btime_ns"`
}

// IsZero reports whether no workspace is bound.
func (w WorkspaceID) IsZero() bool { return w.Path == "" }

// BirthKnown reports whether the identity includes a birth time.
func (w WorkspaceID) BirthKnown() bool { return w.BirthNs != 0 }

// identifier resolves a directory to its identity; the Store holds one so a
// test can stand in for a filesystem that reuses inodes.
type identifier func(dir string) (WorkspaceID, error)

// IdentifyWorkspace resolves dir to its canonical identity. dir must be an
// existing local directory. A missing birth time is not an error here: the
// identity is recorded with BirthNs 0 and every later check reports unknown.
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
	id := WorkspaceID{Path: real, Dev: uint64(st.Dev), Ino: uint64(st.Ino)} //nolint:unconvert // types differ per platform
	id.BirthNs = birthTime(real, id.Ino)
	return id, nil
}

// Verify re-identifies w.Path and reports whether it is still the same
// directory: nil, ErrWorkspaceReplaced, or ErrWorkspaceUnknown.
func (w WorkspaceID) Verify() error { return w.verifyWith(IdentifyWorkspace) }

func (w WorkspaceID) verifyWith(identify identifier) error {
	if w.IsZero() {
		return fmt.Errorf("questions: no workspace bound: %w", ErrWorkspaceUnknown)
	}
	now, err := identify(w.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("questions: workspace %s is gone: %w", w.Path, ErrWorkspaceReplaced)
		}
		return fmt.Errorf("questions: workspace %s: %w: %w", w.Path, ErrWorkspaceUnknown, err)
	}
	if now.Path != w.Path || now.Dev != w.Dev || now.Ino != w.Ino {
		return fmt.Errorf("questions: workspace %s was replaced: %w", w.Path, ErrWorkspaceReplaced)
	}
	if !w.BirthKnown() || !now.BirthKnown() {
		return fmt.Errorf("questions: workspace %s has no birth time to tell a re-created directory apart: %w", w.Path, ErrWorkspaceUnknown)
	}
	if now.BirthNs != w.BirthNs {
		return fmt.Errorf("questions: workspace %s was re-created (same inode, new birth time): %w", w.Path, ErrWorkspaceReplaced)
	}
	return nil
}

// DefaultWorkspace is the workspace an operator session binds when no
// --workspace was given: the directory it was started in, unless that is
// the data dir or inside it (Raven's own state is never a project). ok is
// false when there is no default.
func DefaultWorkspace(cwd, dataDir string) (dir string, ok bool) {
	c, err1 := filepath.EvalSymlinks(cwd)
	d, err2 := filepath.EvalSymlinks(dataDir)
	if err1 != nil {
		return "", false
	}
	if err2 == nil {
		if rel, err := filepath.Rel(d, c); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			return "", false
		}
	}
	c, err := filepath.Abs(c)
	return c, err == nil
}
