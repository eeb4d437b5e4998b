package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace is returned for a path that resolves outside the
// workspace, through ".." or through a symlink.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// Workspace confines file tools to one directory.
type Workspace struct {
	root string // absolute, symlinks resolved
}

// NewWorkspace returns a workspace rooted at dir, creating it if needed.
func NewWorkspace(dir string) (*Workspace, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tools: workspace %s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %s: %w", dir, err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %s: %w", dir, err)
	}
	return &Workspace{root: root}, nil
}

// Root is the workspace directory.
func (w *Workspace) Root() string { return w.root }

// Resolve maps a model-supplied path (relative to the workspace, or absolute
// inside it) to a real path, refusing anything that escapes the workspace,
// symlinks included. The target itself need not exist.
func (w *Workspace) Resolve(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: %q", ErrOutsideWorkspace, p)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(w.root, p)
	}
	if !w.within(abs) {
		return "", fmt.Errorf("%w: %q", ErrOutsideWorkspace, p)
	}
	// Resolve symlinks on the deepest existing ancestor; the rest of the
	// path does not exist yet and so cannot be a link.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", p, err)
	}
	full := filepath.Join(real, rest)
	if !w.within(full) {
		return "", fmt.Errorf("%w: %q (through a symlink)", ErrOutsideWorkspace, p)
	}
	return full, nil
}

func (w *Workspace) within(p string) bool {
	return p == w.root || strings.HasPrefix(p, w.root+string(filepath.Separator))
}
