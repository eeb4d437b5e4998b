package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// SchemaVersion is the jobs.json format this build reads and writes.
const SchemaVersion = 1

// Store errors. Both stop the service and the CLI until the owner acts:
// neither is ever "fixed" by writing an empty job list.
var (
	ErrCorrupt     = errors.New("cron: jobs file is corrupt")
	ErrNewerSchema = errors.New("cron: jobs file was written by a newer raven")
)

// File is the content of jobs.json.
type File struct {
	Version int   `json:"version"`
	Jobs    []Job `json:"jobs"`
}

// Find returns the index of job id, or -1.
func (f *File) Find(id string) int {
	for i := range f.Jobs {
		if f.Jobs[i].ID == id {
			return i
		}
	}
	return -1
}

func (f *File) clone() *File {
	c := &File{Version: f.Version, Jobs: make([]Job, len(f.Jobs))}
	copy(c.Jobs, f.Jobs)
	for i := range c.Jobs {
		if cl := c.Jobs[i].Claim; cl != nil {
			cp := *cl
			c.Jobs[i].Claim = &cp
		}
	}
	return c
}

// stamp identifies one version of the file on disk. Every write is a
// rename of a new file, so the inode changes even when mtime granularity
// would hide a quick second write.
type stamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func stampOf(fi os.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// Store is jobs.json shared by every process on the data dir: reads reload
// only when the file changed; every mutation is read-modify-write under
// jobs.json.lock and lands with an atomic replace. One Store per process.
type Store struct {
	path        string
	lock        *statefile.Lock
	lockTimeout time.Duration
	clock       clock.Clock
	log         *slog.Logger

	// sem serialises lock holders inside this process: flock is per open
	// file, so two goroutines sharing one Lock would both "hold" it.
	sem chan struct{}

	mu     sync.Mutex
	cache  *File
	stamp  stamp
	loaded bool
}

// NewStore returns the store for path (cron/jobs.json). lockTimeout bounds
// the wait for a peer holding the lock.
func NewStore(path string, c clock.Clock, log *slog.Logger, lockTimeout time.Duration) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	return &Store{
		path:        path,
		lock:        statefile.NewLock(path + ".lock"),
		lockTimeout: lockTimeout,
		clock:       c,
		log:         log,
		sem:         make(chan struct{}, 1),
	}
}

// Path is the jobs file's path.
func (s *Store) Path() string { return s.path }

// Snapshot returns the current file, re-reading it only when it changed on
// disk. The result is shared: callers must not modify it. A corrupt file is
// moved aside (under the lock) and reported as ErrCorrupt.
func (s *Store) Snapshot(ctx context.Context) (*File, error) {
	f, err := s.read()
	if errors.Is(err, ErrCorrupt) {
		// Re-check under the lock before moving anything: a peer may be
		// replacing the file right now.
		uerr := s.withLock(ctx, func() error {
			_, err := s.readLocked()
			return err
		})
		return nil, uerr
	}
	return f, err
}

// Update runs fn on a private copy of the freshest file under the lock and
// writes the result atomically when fn reports a change. An fn error aborts
// without writing.
func (s *Store) Update(ctx context.Context, fn func(f *File) (changed bool, err error)) error {
	return s.withLock(ctx, func() error {
		cur, err := s.readLocked()
		if err != nil {
			return err
		}
		next := cur.clone()
		changed, err := fn(next)
		if err != nil || !changed {
			return err
		}
		return s.writeLocked(next)
	})
}

func (s *Store) withLock(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, s.lockTimeout)
	defer cancel()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("cron: %w: %s (held inside this process for over %s)", statefile.ErrLockTimeout, s.lock.Path(), s.lockTimeout)
	}
	defer func() { <-s.sem }()
	if err := s.lock.Acquire(ctx); err != nil {
		if errors.Is(err, statefile.ErrLockTimeout) {
			return fmt.Errorf("cron: another raven process has held %s for over %s: %w", s.lock.Path(), s.lockTimeout, err)
		}
		return fmt.Errorf("cron: %w", err)
	}
	defer func() {
		if err := s.lock.Release(); err != nil {
			s.log.Error("cron: release jobs lock", "err", err)
		}
	}()
	return fn()
}

// read loads without the lock, which is safe because writers replace the
// file atomically; a corrupt file is reported but not moved.
func (s *Store) read() (*File, error) {
	return s.load(false)
}

func (s *Store) readLocked() (*File, error) {
	return s.load(true)
}

func (s *Store) load(locked bool) (*File, error) {
	fh, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		if aside := s.corruptSiblings(); len(aside) > 0 {
			return nil, fmt.Errorf("%w: %s was moved aside to %s earlier; fix it and move it back to %s, or delete it to start with no jobs",
				ErrCorrupt, filepath.Base(s.path), aside[len(aside)-1], s.path)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cache, s.stamp, s.loaded = &File{Version: SchemaVersion}, stamp{}, true
		return s.cache, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron: open %s: %w", s.path, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("cron: stat %s: %w", s.path, err)
	}
	st := stampOf(fi)
	s.mu.Lock()
	if s.loaded && s.stamp == st && s.cache != nil {
		f := s.cache
		s.mu.Unlock()
		return f, nil
	}
	s.mu.Unlock()

	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("cron: read %s: %w", s.path, err)
	}
	f, derr := decodeFile(data)
	if errors.Is(derr, ErrNewerSchema) {
		return nil, fmt.Errorf("%w (%s); upgrade raven — this file is left untouched", derr, s.path)
	}
	if derr != nil {
		if !locked {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, derr)
		}
		aside, merr := statefile.MoveAside(s.path, s.clock.Now())
		if merr != nil {
			return nil, fmt.Errorf("%w: %s: %v (and moving it aside failed: %v)", ErrCorrupt, s.path, derr, merr)
		}
		s.log.Error("cron: jobs file is corrupt; moved aside, no job will run until it is fixed",
			"path", s.path, "moved_to", aside, "err", derr)
		return nil, fmt.Errorf("%w: %s: %v; moved to %s — fix it and move it back, or delete it to start with no jobs",
			ErrCorrupt, s.path, derr, aside)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache, s.stamp, s.loaded = f, st, true
	return f, nil
}

func (s *Store) corruptSiblings() []string {
	m, _ := filepath.Glob(s.path + ".corrupt-*")
	return m
}

func decodeFile(data []byte) (*File, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	if head.Version == nil {
		return nil, errors.New(`missing "version"`)
	}
	if *head.Version > SchemaVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrNewerSchema, *head.Version, SchemaVersion)
	}
	if *head.Version < 1 {
		return nil, fmt.Errorf("bad version %d", *head.Version)
	}
	var f File
	if err := strictjson.Decode(data, &f); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(f.Jobs))
	for i, j := range f.Jobs {
		if j.ID == "" {
			return nil, fmt.Errorf("job %d has no id", i)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("duplicate job id %q", j.ID)
		}
		seen[j.ID] = true
	}
	f.Version = SchemaVersion
	return &f, nil
}

func (s *Store) writeLocked(f *File) error {
	f.Version = SchemaVersion
	if f.Jobs == nil {
		f.Jobs = []Job{}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("cron: encode jobs: %w", err)
	}
	data = append(data, '\n')
	if err := statefile.WriteAtomic(s.path, data, 0o600); err != nil {
		return fmt.Errorf("cron: save jobs: %w", err)
	}
	fi, err := os.Stat(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.cache, s.stamp, s.loaded = f, stampOf(fi), true
	} else {
		s.loaded = false
	}
	return nil
}

// Jobs returns a copy of every job.
func (s *Store) Jobs(ctx context.Context) ([]Job, error) {
	f, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return f.clone().Jobs, nil
}

// Get returns one job.
func (s *Store) Get(ctx context.Context, id string) (Job, error) {
	f, err := s.Snapshot(ctx)
	if err != nil {
		return Job{}, err
	}
	i := f.Find(id)
	if i < 0 {
		return Job{}, fmt.Errorf("%w %q", ErrNotFound, id)
	}
	return f.clone().Jobs[i], nil
}

// Add stores j, giving it a fresh id if its id is taken.
func (s *Store) Add(ctx context.Context, j Job) (Job, error) {
	err := s.Update(ctx, func(f *File) (bool, error) {
		for f.Find(j.ID) >= 0 || j.ID == "" {
			j.ID = newID()
		}
		f.Jobs = append(f.Jobs, j)
		return true, nil
	})
	if err != nil {
		return Job{}, fmt.Errorf("cron: add job: %w", err)
	}
	return j, nil
}

// Remove deletes job id. A fire already running finishes; its record is
// still appended to runs.jsonl.
func (s *Store) Remove(ctx context.Context, id string) error {
	return s.mutate(ctx, id, func(f *File, i int) {
		f.Jobs = append(f.Jobs[:i], f.Jobs[i+1:]...)
	})
}

// SetEnabled enables or disables job id. Enabling a job recomputes its next
// fire from now, so a job disabled for a week does not fire a backlog.
func (s *Store) SetEnabled(ctx context.Context, id string, on bool) error {
	now := s.clock.Now()
	return s.mutate(ctx, id, func(f *File, i int) {
		j := &f.Jobs[i]
		j.Enabled = on
		if on {
			j.DisabledReason = ""
			j.Unanswered = 0
			if c, err := j.Schedule.Compile(); err == nil {
				if n, ok := c.Next(j.CreatedAt, now); ok {
					j.NextRunAt = n
				}
			}
		}
	})
}

// RequestRun asks for one fire of job id as soon as a service sees it,
// independent of its schedule and enabled flag.
func (s *Store) RequestRun(ctx context.Context, id string) error {
	now := s.clock.Now()
	return s.mutate(ctx, id, func(f *File, i int) {
		f.Jobs[i].RunRequestedAt = now
	})
}

func (s *Store) mutate(ctx context.Context, id string, fn func(f *File, i int)) error {
	return s.Update(ctx, func(f *File) (bool, error) {
		i := f.Find(id)
		if i < 0 {
			return false, fmt.Errorf("%w %q", ErrNotFound, id)
		}
		fn(f, i)
		return true, nil
	})
}
