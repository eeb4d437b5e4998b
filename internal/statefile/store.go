package statefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// SupportedVersion is the newest state-file schema this binary reads and writes.
const SupportedVersion = 1

// ErrNewerVersion is matched (errors.Is) by a *NewerVersionError: the file was
// written by a newer Raven and is left untouched rather than downgraded.
var ErrNewerVersion = errors.New("statefile: state file written by a newer version")

// NewerVersionError names the file's schema version and the newest one this
// binary understands.
type NewerVersionError struct {
	Path      string
	Found     int
	Supported int
}

func (e *NewerVersionError) Error() string {
	return fmt.Sprintf("statefile: %s has schema version %d, this raven supports up to %d; upgrade raven (file left untouched)",
		e.Path, e.Found, e.Supported)
}

// Unwrap lets errors.Is(err, ErrNewerVersion) match.
func (e *NewerVersionError) Unwrap() error { return ErrNewerVersion }

// CorruptError reports a state file that could not be parsed. The file has
// already been moved aside to MovedTo; the next access starts from an empty
// file, so the caller decides whether to carry on with in-memory state.
type CorruptError struct {
	Path    string
	MovedTo string
	Err     error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("statefile: %s is corrupt (%v); moved aside to %s", e.Path, e.Err, e.MovedTo)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Options are the Store's dependencies.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// LockTimeout bounds the wait for a peer holding the lock (default 10s).
	LockTimeout time.Duration
}

// Store is a sectioned JSON document shared by several components and
// several processes: {"version":1,"gen":N,"sections":{"policy":{…},…}}.
// Every access holds an exclusive flock on path+".lock"; reads are served
// from a cache while the file's identity and generation are unchanged, so a
// hot path can hydrate before every decision.
type Store struct {
	path    string
	lock    *Lock
	clk     clock.Clock
	log     *slog.Logger
	timeout time.Duration

	mu       sync.Mutex // in-process exclusion; flock alone is per-descriptor
	ident    fileIdent
	gen      uint64
	sections map[string]json.RawMessage
	revs     map[string]uint64
	nextRev  uint64
	prefix   [64]byte
	buf      []byte                     // reused read buffer
	scratch  map[string]json.RawMessage // sections parsed by splitCanonical
}

// fileIdent identifies one version of the file without reading it. The gen
// stamped in the file's first bytes guards against inode reuse within one
// mtime tick.
type fileIdent struct {
	ok    bool
	ino   uint64
	dev   uint64
	size  int64
	mtime int64
}

// Open returns a store for path. The file need not exist.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("statefile: open: empty path")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 10 * time.Second
	}
	return &Store{
		path:     path,
		lock:     NewLock(path + ".lock"),
		clk:      opts.Clock,
		log:      opts.Logger,
		timeout:  opts.LockTimeout,
		sections: map[string]json.RawMessage{},
		revs:     map[string]uint64{},
	}, nil
}

// Path is the state file's path.
func (s *Store) Path() string { return s.path }

// Tx is one locked access to the store. It is valid only inside the
// callback it was passed to.
type Tx struct {
	s        *Store
	readOnly bool
	puts     map[string]json.RawMessage
	putRevs  map[string]uint64
}

// Get decodes section into v and reports whether the section exists.
func (tx *Tx) Get(section string, v any) (bool, error) {
	raw, ok := tx.Raw(section)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("statefile: decode section %q of %s: %w", section, tx.s.path, err)
	}
	return true, nil
}

// Raw returns the section's JSON without decoding it. The bytes must not be
// modified.
func (tx *Tx) Raw(section string) (json.RawMessage, bool) {
	if raw, ok := tx.puts[section]; ok {
		return raw, true
	}
	raw, ok := tx.s.sections[section]
	return raw, ok
}

// Rev is a process-local revision of section that changes whenever its
// content changes (on disk or by Put), so a component can skip decoding a
// section it already holds. 0 means absent.
func (tx *Tx) Rev(section string) uint64 {
	if r, ok := tx.putRevs[section]; ok {
		return r
	}
	return tx.s.revs[section]
}

// Revision changes whenever any section's content changes (on disk or by
// Put), so a component spread over many sections can skip looking at
// each of them when nothing moved. Process-local, like Rev.
func (tx *Tx) Revision() uint64 { return tx.s.nextRev }

// Put replaces section with v's JSON encoding. The file is rewritten when
// the Update callback returns nil.
func (tx *Tx) Put(section string, v any) error {
	if tx.readOnly {
		return fmt.Errorf("statefile: put %q in a read-only view of %s", section, tx.s.path)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("statefile: encode section %q: %w", section, err)
	}
	if tx.puts == nil {
		tx.puts = map[string]json.RawMessage{}
		tx.putRevs = map[string]uint64{}
	}
	tx.puts[section] = raw
	tx.s.nextRev++
	tx.putRevs[section] = tx.s.nextRev
	return nil
}

// View runs fn with the current state under the lock. Put is refused.
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	return s.run(ctx, true, fn)
}

// Update runs fn under the lock on freshly hydrated state and, if fn put
// anything and returned nil, atomically rewrites the file.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	return s.run(ctx, false, fn)
}

func (s *Store) run(ctx context.Context, readOnly bool, fn func(tx *Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	err := s.lock.Acquire(lctx)
	cancel()
	if err != nil {
		return err
	}
	defer s.lock.Release()

	if err := s.hydrateLocked(); err != nil {
		return err
	}
	tx := Tx{s: s, readOnly: readOnly}
	if err := fn(&tx); err != nil {
		return err
	}
	if len(tx.puts) == 0 {
		return nil
	}
	return s.commitLocked(&tx)
}

// hydrateLocked brings the cache up to date with the file. Caller holds both
// locks.
func (s *Store) hydrateLocked() error {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		if s.ident.ok || len(s.sections) > 0 {
			s.replaceSections(map[string]json.RawMessage{})
		}
		s.ident = fileIdent{}
		s.gen = 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("statefile: open %s: %w", s.path, err)
	}
	defer f.Close()
	id, err := identOf(f)
	if err != nil {
		return fmt.Errorf("statefile: stat %s: %w", s.path, err)
	}
	if s.ident.ok && id == s.ident {
		n, _ := f.ReadAt(s.prefix[:], 0)
		if g, ok := parseGen(s.prefix[:n]); ok && g == s.gen {
			return nil
		}
	}
	s.buf = s.buf[:0]
	if want := int(id.size) + 512; cap(s.buf) < want {
		s.buf = make([]byte, 0, want)
	}
	data, err := readAll(f, s.buf)
	if err != nil {
		return fmt.Errorf("statefile: read %s: %w", s.path, err)
	}
	s.buf = data
	if version, gen, ok := s.splitCanonical(data); ok {
		if version > SupportedVersion {
			s.ident = fileIdent{}
			return &NewerVersionError{Path: s.path, Found: version, Supported: SupportedVersion}
		}
		s.replaceSections(s.scratch)
		s.scratch = nil
		s.ident = id
		s.gen = gen
		return nil
	}
	var doc struct {
		Version  int                        `json:"version"`
		Gen      uint64                     `json:"gen"`
		Sections map[string]json.RawMessage `json:"sections"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Version < 0 {
		if err == nil {
			err = fmt.Errorf("negative version %d", doc.Version)
		}
		return s.corruptLocked(err)
	}
	if doc.Version > SupportedVersion {
		s.ident = fileIdent{}
		return &NewerVersionError{Path: s.path, Found: doc.Version, Supported: SupportedVersion}
	}
	for k, v := range doc.Sections {
		doc.Sections[k] = bytes.Clone(v) // data is a reused buffer
	}
	if doc.Sections == nil {
		doc.Sections = map[string]json.RawMessage{}
	}
	s.replaceSections(doc.Sections)
	s.ident = id
	s.gen = doc.Gen
	return nil
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// splitCanonical parses the layout commitLocked writes — one compact
// section per line — without a full JSON decode: sections whose bytes equal
// the cached ones are reused as they are, changed ones are validated and
// copied. Anything else (a hand-edited file) returns ok=false and goes
// through encoding/json. On success the sections are left in s.scratch.
func (s *Store) splitCanonical(data []byte) (version int, gen uint64, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"version":`))
	if !ok {
		return 0, 0, false
	}
	v, rest, ok := cutUint(rest)
	if !ok || v > 1<<20 {
		return 0, 0, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"gen":`)); !ok {
		return 0, 0, false
	}
	gen, rest, ok = cutUint(rest)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"sections":{`)); !ok {
		return 0, 0, false
	}
	if rest, ok = bytes.CutSuffix(rest, []byte("\n}}\n")); !ok {
		return 0, 0, false
	}
	out := make(map[string]json.RawMessage, len(s.sections))
	if int(v) > SupportedVersion {
		return int(v), gen, true
	}
	for len(rest) > 0 {
		if rest, ok = bytes.CutPrefix(rest, []byte("\n\"")); !ok {
			return 0, 0, false
		}
		end := 0
		for end < len(rest) && isNameByte(rest[end]) {
			end++
		}
		if end == 0 || !bytes.HasPrefix(rest[end:], []byte(`":`)) {
			return 0, 0, false
		}
		name := string(rest[:end])
		rest = rest[end+2:]
		line := rest
		next := bytes.Index(rest, []byte(",\n\""))
		if next >= 0 {
			line, rest = rest[:next], rest[next+1:]
		} else {
			rest = nil
		}
		if old, had := s.sections[name]; had && bytes.Equal(old, line) {
			out[name] = old
			continue
		}
		if !json.Valid(line) {
			return 0, 0, false
		}
		out[name] = bytes.Clone(line)
	}
	s.scratch = out
	return int(v), gen, true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func cutUint(b []byte) (uint64, []byte, bool) {
	var v uint64
	n := 0
	for n < len(b) && n < 19 && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + uint64(b[n]-'0')
		n++
	}
	// JSON has no leading zeros: "01" is left to encoding/json to refuse.
	return v, b[n:], n > 0 && !(n > 1 && b[0] == '0')
}

func (s *Store) corruptLocked(cause error) error {
	s.ident = fileIdent{}
	moved, err := MoveAside(s.path, s.clk.Now())
	if err != nil {
		return fmt.Errorf("statefile: %s is corrupt (%v) and could not be moved aside: %w", s.path, cause, err)
	}
	s.log.Error("statefile: corrupt state file moved aside", "path", s.path, "moved_to", moved, "err", cause)
	s.replaceSections(map[string]json.RawMessage{})
	s.gen = 0
	return &CorruptError{Path: s.path, MovedTo: moved, Err: cause}
}

// replaceSections swaps in freshly read sections, bumping the revision of
// every section whose bytes changed.
func (s *Store) replaceSections(next map[string]json.RawMessage) {
	for name, raw := range next {
		if old, ok := s.sections[name]; !ok || !bytes.Equal(old, raw) {
			s.nextRev++
			s.revs[name] = s.nextRev
		}
	}
	for name := range s.sections {
		if _, ok := next[name]; !ok {
			delete(s.revs, name)
			s.nextRev++ // Revision moves on a removal too
		}
	}
	s.sections = next
}

func (s *Store) commitLocked(tx *Tx) error {
	next := make(map[string]json.RawMessage, len(s.sections)+len(tx.puts))
	for k, v := range s.sections {
		next[k] = v
	}
	for k, v := range tx.puts {
		next[k] = v
	}
	names := make([]string, 0, len(next))
	size := 64
	for k, v := range next {
		names = append(names, k)
		size += len(k) + len(v) + 8
	}
	sort.Strings(names)
	gen := s.gen + 1
	buf := make([]byte, 0, size)
	buf = append(buf, `{"version":`...)
	buf = strconv.AppendInt(buf, SupportedVersion, 10)
	buf = append(buf, `,"gen":`...)
	buf = strconv.AppendUint(buf, gen, 10)
	buf = append(buf, `,"sections":{`...)
	for i, name := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '\n')
		buf = strconv.AppendQuote(buf, name)
		buf = append(buf, ':')
		buf = append(buf, next[name]...)
	}
	buf = append(buf, "\n}}\n"...)
	if err := WriteAtomic(s.path, buf, 0o600); err != nil {
		// The file may or may not have changed: force a full re-read.
		s.ident = fileIdent{}
		return err
	}
	s.sections = next
	for k, r := range tx.putRevs {
		s.revs[k] = r
	}
	s.gen = gen
	s.ident = fileIdent{}
	if st, err := os.Stat(s.path); err == nil {
		s.ident = identFromInfo(st)
	}
	return nil
}

func identOf(f *os.File) (fileIdent, error) {
	st, err := f.Stat()
	if err != nil {
		return fileIdent{}, err
	}
	return identFromInfo(st), nil
}

func identFromInfo(st os.FileInfo) fileIdent {
	id := fileIdent{ok: true, size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.ino = uint64(sys.Ino)
		id.dev = uint64(sys.Dev)
	}
	return id
}

// parseGen reads the generation from the fixed prefix this package writes.
// Hand-edited files may not match; the caller then re-reads the whole file.
func parseGen(prefix []byte) (uint64, bool) {
	i := bytes.Index(prefix, []byte(`"gen":`))
	if i < 0 {
		return 0, false
	}
	p := prefix[i+6:]
	var g uint64
	n := 0
	for n < len(p) && p[n] >= '0' && p[n] <= '9' {
		g = g*10 + uint64(p[n]-'0')
		n++
	}
	if n == 0 || n == len(p) {
		return 0, false
	}
	return g, true
}
