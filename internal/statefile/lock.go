package statefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// ErrLockTimeout is returned when a lock could not be taken in time because a
// peer process holds it.
var ErrLockTimeout = errors.New("statefile: timed out waiting for lock")

// Lock is an exclusive flock(2) on a lock file, shared between processes.
type Lock struct {
	fl *flock.Flock
}

// NewLock returns a lock on path (created on first use).
func NewLock(path string) *Lock { return &Lock{fl: flock.New(path)} }

// Path is the lock file's path.
func (l *Lock) Path() string { return l.fl.Path() }

// Acquire takes the exclusive lock, polling until ctx ends. A context
// deadline becomes ErrLockTimeout naming the lock file.
func (l *Lock) Acquire(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(l.fl.Path()), 0o700); err != nil {
		return fmt.Errorf("statefile: mkdir for lock %s: %w", l.fl.Path(), err)
	}
	ok, err := l.fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %s", ErrLockTimeout, l.fl.Path())
		}
		return fmt.Errorf("statefile: lock %s: %w", l.fl.Path(), err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrLockTimeout, l.fl.Path())
	}
	return nil
}

// TryAcquire takes the lock if it is free and reports whether it did.
func (l *Lock) TryAcquire() (bool, error) {
	if err := os.MkdirAll(filepath.Dir(l.fl.Path()), 0o700); err != nil {
		return false, fmt.Errorf("statefile: mkdir for lock %s: %w", l.fl.Path(), err)
	}
	ok, err := l.fl.TryLock()
	if err != nil {
		return false, fmt.Errorf("statefile: lock %s: %w", l.fl.Path(), err)
	}
	return ok, nil
}

// Held reports whether another process holds the lock exclusively. It
// probes with a shared lock, so any number of processes can probe at once
// without seeing each other as the holder.
func (l *Lock) Held() (bool, error) {
	if err := os.MkdirAll(filepath.Dir(l.fl.Path()), 0o700); err != nil {
		return false, fmt.Errorf("statefile: mkdir for lock %s: %w", l.fl.Path(), err)
	}
	ok, err := l.fl.TryRLock()
	if err != nil {
		return false, fmt.Errorf("statefile: probe lock %s: %w", l.fl.Path(), err)
	}
	if ok {
		if err := l.fl.Unlock(); err != nil {
			return false, fmt.Errorf("statefile: unlock %s: %w", l.fl.Path(), err)
		}
	}
	return !ok, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if err := l.fl.Unlock(); err != nil {
		return fmt.Errorf("statefile: unlock %s: %w", l.fl.Path(), err)
	}
	return nil
}
