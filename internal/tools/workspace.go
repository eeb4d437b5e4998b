package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutsideWorkspace is returned for a path that resolves outside the
// workspace, through "..", an absolute path or a symlink.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// Workspace confines file tools to one directory. Every operation goes
// through an os.Root, which resolves each path component with openat beneath
// the root's descriptor, so a link swapped in between a check and the open
// cannot lead outside: there is no separate check.
type Workspace struct {
	root string   // absolute, symlinks resolved; for display and exec's cwd
	fs   *os.Root // all file access
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
	fs, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %s: %w", dir, err)
	}
	return &Workspace{root: root, fs: fs}, nil
}

// Root is the workspace directory.
func (w *Workspace) Root() string { return w.root }

// Close releases the workspace's directory descriptor.
func (w *Workspace) Close() error { return w.fs.Close() }

// Rel maps a model-supplied path (relative to the workspace, or absolute
// inside it) to a workspace-relative name. It is lexical only: links are
// resolved, and refused if they lead outside, when the name is opened.
func (w *Workspace) Rel(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: bad path", ErrOutsideWorkspace)
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(w.root, filepath.Clean(p))
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			// Never echo it: it would tell the model about the machine.
			return "", fmt.Errorf("%w: an absolute path outside the workspace", ErrOutsideWorkspace)
		}
		return rel, nil
	}
	rel := filepath.Clean(p)
	if !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("%w: %q", ErrOutsideWorkspace, p)
	}
	return rel, nil
}

// errRootEscape is os.Root's own (unexported) refusal text for a name or
// link that leads outside the root.
const errRootEscape = "path escapes from parent"

// toolErr turns a file-system error into what the model may see: the
// operation and the reason, without the absolute path *os.PathError and
// *os.LinkError carry, and an escape as ErrOutsideWorkspace.
func toolErr(err error) error {
	for {
		var pe *os.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		default:
			if err.Error() == errRootEscape {
				return fmt.Errorf("%w (through a symlink; links must be relative and stay inside)", ErrOutsideWorkspace)
			}
			return err
		}
	}
}

// readLimited reads at most limit+1 bytes of name, so the caller can tell a
// larger file apart.
func (w *Workspace) readLimited(name string, limit int64) ([]byte, error) {
	f, err := w.fs.Open(name)
	if err != nil {
		return nil, toolErr(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		// os.Root cannot tell where a hard link's other names are: a link
		// planted in the workspace to a file outside (a token, a key) would
		// read as a workspace file. Checked on the open descriptor, so a
		// swap cannot slip between the check and the read.
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return nil, fmt.Errorf("%w: the file has %d hard links and one may be outside", ErrOutsideWorkspace, st.Nlink)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, toolErr(err)
	}
	return b, nil
}

// readDir lists the directory name.
func (w *Workspace) readDir(name string) ([]os.DirEntry, error) {
	f, err := w.fs.Open(name)
	if err != nil {
		return nil, toolErr(err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, toolErr(err)
	}
	return ents, nil
}

// writeAtomic replaces name with data inside the root: a temp file beside
// it, fsync, rename over it, fsync the directory. The rename replaces a link
// at name rather than following it, and every step resolves beneath the root.
// The temp name pattern matches statefile.WriteAtomic's so one start-up sweep
// can remove leftovers of both.
func (w *Workspace) writeAtomic(name string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(name)
	dir = filepath.Clean(dir)
	if base == "" || base == "." {
		return fmt.Errorf("not a file name")
	}
	if dir != "." {
		if err := w.fs.MkdirAll(dir, 0o700); err != nil {
			return toolErr(err)
		}
	}
	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := w.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return toolErr(err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			w.fs.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return toolErr(err)
	}
	if err := f.Chmod(perm); err != nil {
		return toolErr(err)
	}
	if err := f.Sync(); err != nil {
		return toolErr(err)
	}
	if err := f.Close(); err != nil {
		return toolErr(err)
	}
	if err := w.fs.Rename(tmp, name); err != nil {
		w.fs.Remove(tmp)
		ok = true
		return toolErr(err)
	}
	ok = true
	if d, err := w.fs.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
