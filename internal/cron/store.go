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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// SchemaVersion is the jobs.json format this build reads and writes.
// Version 2 added the generation the journal's lines are tagged with; a
// version 1 file loads, and is rewritten as version 2 by the first change.
const SchemaVersion = 2

// Store errors. Both stop the service and the CLI until the owner acts:
// neither is ever "fixed" by writing an empty job list.
var (
	ErrCorrupt     = errors.New("cron: jobs file is corrupt")
	ErrNewerSchema = errors.New("cron: jobs file was written by a newer raven")
)

// File is the content of jobs.json with the journal folded in.
type File struct {
	Version int   `json:"version"`
	Jobs    []Job `json:"jobs"`

	gen int64 // the snapshot's generation (0: a version 1 file, or none)
}

// diskFile is jobs.json as written.
type diskFile struct {
	Version    int   `json:"version"`
	Generation int64 `json:"generation"`
	Jobs       []Job `json:"jobs"`
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
	c := &File{Version: f.Version, Jobs: make([]Job, len(f.Jobs)), gen: f.gen}
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

// Store is jobs.json and its journal, shared by every process on the data
// dir: a read re-decodes the snapshot only when it was replaced and
// otherwise folds just the journal lines it has not seen; every mutation is
// read-modify-append under jobs.json.lock. One Store per process.
type Store struct {
	path        string
	lock        *statefile.Lock
	lockTimeout time.Duration
	clock       clock.Clock
	log         *slog.Logger

	// sem serialises lock holders inside this process: flock is per open
	// file, so two goroutines sharing one Lock would both "hold" it.
	sem chan struct{}

	// loadMu serialises loads, which build each view from the last one.
	loadMu sync.Mutex
	view   *view

	// decoded counts the jobs decoded from disk (snapshot and journal):
	// what a test reads to prove a reload cost the change, not the file.
	decoded atomic.Int64
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

// JournalPath is the path of the journal of changes since jobs.json.
func (s *Store) JournalPath() string { return journalPath(s.path) }

// Snapshot returns the current file, re-reading only what changed on disk.
// The result is shared: callers must not modify it. A corrupt file or
// journal is moved aside (under the lock) and reported as ErrCorrupt.
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

// Update runs fn on a private copy of the freshest file under the lock and,
// when fn reports a change, writes the whole result as a new snapshot. It
// is for edits of any shape; the store's own mutations append only the
// jobs they change (edit). An fn error aborts without writing.
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
		return s.compactLocked(next)
	})
}

// edit runs fn on the freshest file (shared: fn must not modify it) under
// the lock; the jobs fn puts or deletes are appended to the journal, or
// the journal is compacted into a new snapshot when it outgrew its bound.
func (s *Store) edit(ctx context.Context, fn func(cur *File, c *change) error) error {
	return s.withLock(ctx, func() error { return s.editLocked(fn) })
}

func (s *Store) editLocked(fn func(cur *File, c *change) error) error {
	{
		cur, err := s.readLocked()
		if err != nil {
			return err
		}
		var c change
		if err := fn(cur, &c); err != nil || len(c.recs) == 0 {
			return err
		}
		s.loadMu.Lock()
		v := s.view
		s.loadMu.Unlock()
		gen := cur.gen
		var extra int64
		for i := range c.recs {
			c.recs[i].Gen = gen
			extra += 256 // an estimate is enough for the bound
		}
		if v == nil || v.file != cur || v.needsCompaction(extra) {
			next := cur
			if v != nil && v.file == cur {
				// apply shares the index map with v: v is dropped below
				// whatever the outcome.
				next = v.apply(c.recs).file
			} else {
				next = newView(cur.clone(), stamp{}, 0).apply(c.recs).file
			}
			s.loadMu.Lock()
			s.view = nil
			s.loadMu.Unlock()
			return s.compactLocked(next)
		}
		if err := s.appendLocked(c.recs); err != nil {
			return err
		}
		// Fold our own lines like any reader: the view stays the journal's prefix.
		_, err = s.readLocked()
		return err
	}
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
// snapshot atomically and append whole journal lines; a corrupt file is
// reported but not moved.
func (s *Store) read() (*File, error) {
	return s.load(false)
}

func (s *Store) readLocked() (*File, error) {
	return s.load(true)
}

func (s *Store) load(locked bool) (*File, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	for range 3 {
		v, err := s.loadView(s.view, locked)
		if errors.Is(err, errReload) {
			s.view = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		s.view = v
		return v.file, nil
	}
	return nil, fmt.Errorf("cron: %s keeps changing under the reader; try again", s.path)
}

// loadView returns cur brought up to date: the snapshot decoded again only
// when it was replaced, then the journal lines past cur's offset.
func (s *Store) loadView(cur *view, locked bool) (*view, error) {
	fh, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		if aside := s.corruptSiblings(); len(aside) > 0 {
			return nil, fmt.Errorf("%w: %s was moved aside to %s earlier; fix it and move it back to %s, or delete it to start with no jobs",
				ErrCorrupt, filepath.Base(s.path), aside[len(aside)-1], s.path)
		}
		// No snapshot: no jobs. A journal left beside it has generation
		// lines that no snapshot of generation 0 takes; the first write
		// compacts them away.
		return newView(&File{Version: SchemaVersion}, stamp{}, 0), nil
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
	if cur == nil || cur.stamp != st {
		data, err := io.ReadAll(fh)
		if err != nil {
			return nil, fmt.Errorf("cron: read %s: %w", s.path, err)
		}
		f, err := s.decodeSnapshot(data, locked)
		if err != nil {
			return nil, err
		}
		cur = newView(f, st, int64(len(data)))
	}
	return s.foldJournal(cur, locked)
}

func (s *Store) decodeSnapshot(data []byte, locked bool) (*File, error) {
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
	s.decoded.Add(int64(len(f.Jobs)))
	return f, nil
}

func (s *Store) corruptSiblings() []string {
	m, _ := filepath.Glob(s.path + ".corrupt-*")
	return m
}

// decodeFile decodes jobs.json in one strict pass; only a file that fails
// it is looked at again, leniently, to tell a newer format from damage.
func decodeFile(data []byte) (*File, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	var d struct {
		Version    *int  `json:"version"`
		Generation int64 `json:"generation"`
		Jobs       []Job `json:"jobs"`
	}
	// encoding/json appends into the capacity it finds: sized from a key
	// every job has once, the slice never regrows (an 8 MB saving at
	// 10,000), and the headroom takes the journal's next adds without a copy.
	n := bytes.Count(data, []byte(`"created_at"`))
	d.Jobs = make([]Job, 0, n+n/8+16)
	if err := strictjson.DecodeLarge(data, &d); err != nil {
		var head struct {
			Version *int `json:"version"`
		}
		if json.Unmarshal(data, &head) == nil && head.Version != nil && *head.Version > SchemaVersion {
			return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrNewerSchema, *head.Version, SchemaVersion)
		}
		return nil, err
	}
	switch {
	case d.Version == nil:
		return nil, errors.New(`missing "version"`)
	case *d.Version > SchemaVersion:
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrNewerSchema, *d.Version, SchemaVersion)
	case *d.Version < 1:
		return nil, fmt.Errorf("bad version %d", *d.Version)
	case *d.Version == 1 && d.Generation != 0:
		return nil, errors.New(`"generation" in a version 1 file`)
	case d.Generation < 0:
		return nil, fmt.Errorf("bad generation %d", d.Generation)
	}
	seen := make(map[string]bool, len(d.Jobs))
	for i, j := range d.Jobs {
		if j.ID == "" {
			return nil, fmt.Errorf("job %d has no id", i)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("duplicate job id %q", j.ID)
		}
		seen[j.ID] = true
	}
	return &File{Version: SchemaVersion, Jobs: d.Jobs, gen: d.Generation}, nil
}

// compactLocked writes f as the next snapshot generation, then starts a
// fresh journal. A crash between the two leaves journal lines tagged with
// the old generation, which every reader ignores.
func (s *Store) compactLocked(f *File) error {
	jobs := f.Jobs
	if jobs == nil {
		jobs = []Job{}
	}
	d := diskFile{Version: SchemaVersion, Generation: f.gen + 1, Jobs: jobs}
	// Compact, not indented: a quarter fewer bytes for every reader to scan.
	data, err := json.Marshal(&d)
	if err != nil {
		return fmt.Errorf("cron: encode jobs: %w", err)
	}
	data = append(data, '\n')
	if err := statefile.WriteAtomic(s.path, data, 0o600); err != nil {
		return fmt.Errorf("cron: save jobs: %w", err)
	}
	if err := statefile.WriteAtomic(journalPath(s.path), nil, 0o600); err != nil {
		return fmt.Errorf("cron: start a fresh journal: %w", err)
	}
	fi, err := os.Stat(s.path)
	jfi, jerr := os.Stat(journalPath(s.path))
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.view = nil
	if err == nil && jerr == nil {
		nf := &File{Version: SchemaVersion, Jobs: jobs, gen: d.Generation}
		v := newView(nf, stampOf(fi), int64(len(data)))
		v.jIno, v.jMod = stampOf(jfi).ino, jfi.ModTime()
		s.view = v
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
	err := s.withLock(ctx, func() error {
		if done, err := s.addCold(&j); done || err != nil {
			return err
		}
		return s.editLocked(func(f *File, c *change) error {
			for f.Find(j.ID) >= 0 || j.ID == "" {
				j.ID = newID()
			}
			c.put(j)
			return nil
		})
	})
	if err != nil {
		return Job{}, fmt.Errorf("cron: add job: %w", err)
	}
	return j, nil
}

// Remove deletes job id. A fire already running finishes; its record is
// still appended to runs.jsonl.
func (s *Store) Remove(ctx context.Context, id string) error {
	return s.edit(ctx, func(f *File, c *change) error {
		if f.Find(id) < 0 {
			return fmt.Errorf("%w %q", ErrNotFound, id)
		}
		c.del(id)
		return nil
	})
}

// SetEnabled enables or disables job id. Enabling a job recomputes its next
// fire from now, so a job disabled for a week does not fire a backlog.
func (s *Store) SetEnabled(ctx context.Context, id string, on bool) error {
	now := s.clock.Now()
	return s.mutate(ctx, id, func(j *Job) {
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
	return s.mutate(ctx, id, func(j *Job) {
		j.RunRequestedAt = now
	})
}

// mutate rewrites one job: fn gets a copy, and only that job is written.
func (s *Store) mutate(ctx context.Context, id string, fn func(j *Job)) error {
	return s.edit(ctx, func(f *File, c *change) error {
		i := f.Find(id)
		if i < 0 {
			return fmt.Errorf("%w %q", ErrNotFound, id)
		}
		j := f.Jobs[i]
		fn(&j)
		c.put(j)
		return nil
	})
}
