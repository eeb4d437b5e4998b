package predictor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// RoutineStore keeps the learned routines and the owner's messages they were
// learned from in sentinel/routines.json, and updates both incrementally: a
// tick reads only the HISTORY.md bytes appended since the last one (a stat
// when nothing was), and the learner runs again only when new owner messages
// arrived or the day changed. A restart starts from the file, not from a
// re-read of the history.
type RoutineStore struct {
	o   RoutineStoreOptions
	log *slog.Logger

	mu     sync.Mutex
	st     routineState
	loaded bool
}

// RoutineStoreOptions configure a RoutineStore.
type RoutineStoreOptions struct {
	// Path is sentinel/routines.json; HistoryPath is HISTORY.md.
	Path        string
	HistoryPath string
	// TailBytes of HISTORY.md read when the store starts from nothing, or
	// when the history was rewritten (default 256 KiB).
	TailBytes int
	Learner   *RoutineLearner
	Location  *time.Location
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Defaults and bounds.
const (
	DefaultRoutineTailBytes = 256 << 10
	// routineLinesMax bounds the owner messages kept (oldest dropped):
	// half a year of a chatty owner.
	routineLinesMax     = 20_000
	routineStateVersion = 1
)

// routineState is routines.json.
type routineState struct {
	Version int `json:"version"`
	// Inode and Offset say how much of which HISTORY.md was consumed.
	Inode  uint64 `json:"inode"`
	Offset int64  `json:"offset"`
	// Day is the local day the routines were learned on (staleness is
	// judged against today).
	Day       string    `json:"day"`
	LearnedAt time.Time `json:"learned_at"`
	Routines  []Routine `json:"routines"`
	// Lines are the owner's messages in the learning window, as history lines.
	Lines []string `json:"lines"`
}

// NewRoutineStore returns a store; nothing is read until Routines.
func NewRoutineStore(o RoutineStoreOptions) *RoutineStore {
	if o.TailBytes <= 0 {
		o.TailBytes = DefaultRoutineTailBytes
	}
	if o.Learner == nil {
		o.Learner = NewRoutineLearner(LearnerOptions{})
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RoutineStore{o: o, log: log}
}

// Routines returns the learned routines, first consuming what HISTORY.md
// gained since the last call.
func (s *RoutineStore) Routines() []Routine {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	if !s.loaded {
		s.load(now)
		s.loaded = true
	}
	added, err := s.consume()
	if err != nil {
		s.log.Debug("routines: history unreadable; keeping what was learned", "err", err)
	}
	day := now.In(s.o.Location).Format(time.DateOnly)
	if !added && s.st.Day == day {
		return s.st.Routines
	}
	s.prune(now)
	s.st.Routines = s.o.Learner.Learn(strings.Join(s.st.Lines, "\n"), now, s.o.Location)
	s.st.Day, s.st.LearnedAt = day, now
	s.save()
	return s.st.Routines
}

// load reads routines.json; a corrupt one is moved aside and reported, and
// the routines are learned again from the history (they are derived data).
func (s *RoutineStore) load(now time.Time) {
	s.st = routineState{Version: routineStateVersion}
	data, err := os.ReadFile(s.o.Path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		var st routineState
		if err = strictjson.Decode(data, &st); err == nil && st.Version == routineStateVersion {
			s.st = st
			return
		}
		if err == nil {
			err = fmt.Errorf("unknown version %d", st.Version)
		}
		aside, merr := statefile.MoveAside(s.o.Path, now)
		s.log.Warn("routines: state unreadable; moved aside, learning again from HISTORY.md",
			"path", s.o.Path, "moved_to", aside, "err", err, "move_err", merr)
		return
	}
	s.log.Warn("routines: state unreadable; learning again from HISTORY.md", "path", s.o.Path, "err", err)
}

// consume appends the owner's messages written to HISTORY.md since Offset;
// a history that was replaced or shrank is read again from its tail.
func (s *RoutineStore) consume() (added bool, err error) {
	fh, err := os.Open(s.o.HistoryPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false, err
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	size := fi.Size()
	if ino == s.st.Inode && size == s.st.Offset {
		return false, nil
	}
	from, rebuilt := s.st.Offset, false
	if ino != s.st.Inode || size < s.st.Offset || size-s.st.Offset > int64(s.o.TailBytes) {
		// Rewritten, or too far behind to catch up line by line: start
		// again from the tail (what a fresh learner would read).
		s.st.Lines, rebuilt = nil, true
		from = max(0, size-int64(s.o.TailBytes))
	}
	buf := make([]byte, size-from)
	if _, err := fh.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	// Only whole lines: a line being appended right now is read next time.
	end := bytes.LastIndexByte(buf, '\n') + 1
	chunk := buf[:end]
	if rebuilt && from > 0 {
		// A tail starts mid-line: drop the fragment.
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			chunk = chunk[i+1:]
		}
	}
	n := len(s.st.Lines)
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		if _, _, ok := parseLine(string(line)); ok {
			s.st.Lines = append(s.st.Lines, string(line))
		}
	}
	s.st.Inode, s.st.Offset = ino, from+int64(end)
	return rebuilt || len(s.st.Lines) != n, nil
}

// prune drops messages older than the learner's horizon, and the oldest
// past the line cap.
func (s *RoutineStore) prune(now time.Time) {
	cutoff := now.Add(-s.o.Learner.o.MaxAge)
	keep := s.st.Lines[:0]
	for _, l := range s.st.Lines {
		if at, _, ok := parseLine(l); ok && !at.Before(cutoff) {
			keep = append(keep, l)
		}
	}
	if len(keep) > routineLinesMax {
		keep = keep[len(keep)-routineLinesMax:]
	}
	s.st.Lines = keep
}

func (s *RoutineStore) save() {
	if s.o.Path == "" {
		return
	}
	if s.st.Lines == nil {
		s.st.Lines = []string{}
	}
	data, err := json.Marshal(s.st)
	if err == nil {
		err = statefile.WriteAtomic(s.o.Path, append(data, '\n'), 0o600)
	}
	if err != nil {
		s.log.Warn("routines: state not saved; learned again after a restart", "path", s.o.Path, "err", err)
	}
}
