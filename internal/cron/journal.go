package cron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/jsonl"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// The journal makes a change cost its own size, not the file's: jobs.json
// is the compacted snapshot and jobs.journal.jsonl the job records written
// since, one JSON line each, appended under jobs.json.lock. Readers fold the
// lines after the offset they last reached. Every line names the snapshot
// generation it applies to, so lines left behind by a crash between the two
// steps of a compaction (new snapshot, fresh journal) are ignored, not
// applied twice.

// record is one journal line: a job written whole, or a job deleted.
type record struct {
	Gen int64  `json:"gen"`
	Put *Job   `json:"put,omitempty"`
	Del string `json:"del,omitempty"`
}

// minCompactBytes is the journal size below which no compaction happens;
// above it the journal is compacted once it outgrows a quarter of the
// snapshot, so a reader's full load costs at most 1.25 snapshot decodes.
const minCompactBytes = 64 << 10

// errReload asks load for a full re-read: the journal was replaced or
// shrank under an unchanged snapshot, so the folded view is not its prefix.
var errReload = errors.New("cron: journal replaced; reload")

func journalPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".journal.jsonl"
}

// view is what one load of the store saw: the snapshot and the journal
// lines folded onto it.
type view struct {
	file  *File          // shared with callers: never modified in place
	index map[string]int // id → position in file.Jobs; owned by the newest view
	stamp stamp          // the snapshot's
	size  int64          // snapshot bytes, for the compaction bound
	jIno  uint64         // the journal folded (0: none yet)
	jOff  int64          // journal bytes folded, always at a line end
	jMod  time.Time      // the journal's mtime when jOff was reached
	stale int            // journal lines of another generation
}

func newView(f *File, st stamp, size int64) *view {
	v := &view{file: f, stamp: st, size: size}
	v.reindex()
	return v
}

func (v *view) reindex() {
	v.index = make(map[string]int, len(v.file.Jobs))
	for i := range v.file.Jobs {
		v.index[v.file.Jobs[i].ID] = i
	}
}

// apply returns the view with recs folded in. Callers may hold the old
// file, so it is never written: new jobs are appended past its length
// (its slice never sees them), and a replace or delete copies the slice.
func (v *view) apply(recs []record) *view {
	nv := *v
	if len(recs) == 0 {
		return &nv
	}
	jobs := v.file.Jobs
	appendOnly := true
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if r.Put == nil || seen[r.Put.ID] {
			appendOnly = false
			break
		}
		if _, ok := v.index[r.Put.ID]; ok {
			appendOnly = false
			break
		}
		seen[r.Put.ID] = true
	}
	if !appendOnly {
		jobs = slices.Clone(jobs)
	}
	for _, r := range recs {
		if r.Put != nil {
			if i, ok := nv.index[r.Put.ID]; ok {
				jobs[i] = *r.Put
				continue
			}
			nv.index[r.Put.ID] = len(jobs)
			jobs = append(jobs, *r.Put)
			continue
		}
		if i, ok := nv.index[r.Del]; ok {
			jobs = slices.Delete(jobs, i, i+1)
			delete(nv.index, r.Del)
			// Positions after i moved; fix them before the next record.
			for k := i; k < len(jobs); k++ {
				nv.index[jobs[k].ID] = k
			}
		}
	}
	nv.file = &File{Version: v.file.Version, Jobs: jobs, gen: v.file.gen}
	return &nv
}

// foldJournal reads the journal lines past v's offset and returns the view
// with them applied. A line that does not decode (and is not the torn last
// line of an append cut short) makes the journal corrupt: under the lock it
// is moved aside and reported, never dropped.
func (s *Store) foldJournal(v *view, locked bool) (*view, error) {
	jp := journalPath(s.path)
	fh, err := os.Open(jp)
	if errors.Is(err, os.ErrNotExist) {
		if aside, _ := filepath.Glob(jp + ".corrupt-*"); len(aside) > 0 {
			return nil, fmt.Errorf("%w: the journal %s was moved aside to %s earlier; move it back to apply its changes, or delete it to drop them",
				ErrCorrupt, filepath.Base(jp), aside[len(aside)-1])
		}
		if v.jIno != 0 {
			return nil, errReload
		}
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron: open %s: %w", jp, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("cron: stat %s: %w", jp, err)
	}
	ino := stampOf(fi).ino
	switch {
	case v.jIno == 0 && v.jOff == 0:
	case ino != v.jIno || fi.Size() < v.jOff:
		return nil, errReload
	}
	if fi.Size() == v.jOff {
		switch {
		case v.jIno == 0:
			nv := *v
			nv.jIno, nv.jMod = ino, fi.ModTime()
			return &nv, nil
		case !fi.ModTime().Equal(v.jMod):
			return nil, errReload // rewritten in place (an owner's repair)
		}
		return v, nil
	}
	buf := make([]byte, fi.Size()-v.jOff)
	if _, err := fh.ReadAt(buf, v.jOff); err != nil {
		return nil, fmt.Errorf("cron: read %s: %w", jp, err)
	}
	// A last line with no newline is an append in progress or cut short:
	// not ours to read yet (the next writer truncates a torn one).
	end := bytes.LastIndexByte(buf, '\n') + 1
	var recs []record
	stale := 0
	for off := 0; off < end; {
		n := bytes.IndexByte(buf[off:end], '\n')
		line := bytes.TrimSpace(buf[off : off+n])
		at := v.jOff + int64(off)
		off += n + 1
		if len(line) == 0 {
			continue
		}
		var r record
		derr := strictjson.Decode(line, &r)
		switch {
		case derr != nil:
		case r.Put == nil && r.Del == "":
			derr = errors.New("record is neither put nor del")
		case r.Put != nil && r.Put.ID == "":
			derr = errors.New("put of a job with no id")
		}
		if derr != nil {
			return nil, s.corruptJournal(jp, at, derr, locked)
		}
		if r.Gen != v.file.gen {
			stale++
			continue
		}
		if r.Put != nil {
			s.decoded.Add(1)
		}
		recs = append(recs, r)
	}
	nv := v.apply(recs)
	nv.jIno, nv.jOff, nv.stale = ino, v.jOff+int64(end), v.stale+stale
	nv.jMod = fi.ModTime()
	return nv, nil
}

func (s *Store) corruptJournal(jp string, at int64, derr error, locked bool) error {
	if !locked {
		return fmt.Errorf("%w: %s at byte %d: %v", ErrCorrupt, jp, at, derr)
	}
	aside, merr := statefile.MoveAside(jp, s.clock.Now())
	if merr != nil {
		return fmt.Errorf("%w: %s at byte %d: %v (and moving it aside failed: %v)", ErrCorrupt, jp, at, derr, merr)
	}
	s.log.Error("cron: jobs journal is corrupt; moved aside, no job will run until it is fixed",
		"path", jp, "offset", at, "moved_to", aside, "err", derr)
	return fmt.Errorf("%w: %s at byte %d: %v; moved to %s — fix it and move it back, or delete it to drop its changes",
		ErrCorrupt, jp, at, derr, aside)
}

// appendLocked writes recs to the journal under the lock, first cutting a
// torn last line left by a writer that died mid-append.
func (s *Store) appendLocked(recs []record) error {
	jp := journalPath(s.path)
	if err := jsonl.TrimTorn(jp); err != nil {
		return fmt.Errorf("cron: journal: %w", err)
	}
	lines := make([][]byte, 0, len(recs))
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("cron: encode journal record: %w", err)
		}
		lines = append(lines, b)
	}
	if err := jsonl.AppendLines(jp, lines, jsonl.AppendOptions{Sync: true}); err != nil {
		return fmt.Errorf("cron: journal: %w", err)
	}
	return nil
}

// change collects one locked edit's writes.
type change struct {
	recs []record
}

// put records j written whole.
func (c *change) put(j Job) { c.recs = append(c.recs, record{Put: &j}) }

// del records job id deleted.
func (c *change) del(id string) { c.recs = append(c.recs, record{Del: id}) }

// needsCompaction reports whether v's journal should be folded into a new
// snapshot instead of growing by extra bytes: a snapshot of an older
// format or generation 0 (an older build would not see the journal), stale
// lines, or a journal past its bound.
func (v *view) needsCompaction(extra int64) bool {
	return v.file.gen == 0 || v.stale > 0 || v.jOff+extra > max(minCompactBytes, v.size/4)
}

// addCold is Add in a process that has not loaded the store ("raven cron
// add"): with a snapshot in the form this build writes, the generation is
// in its first bytes and an id is free when it occurs in neither file, so
// the job is appended without decoding any job. done is false when the
// ordinary path must run (no view to skip, another form, a compaction due,
// anything to report); it then decides and reports. A snapshot damaged
// past its head is found by the next full read, which moves it aside
// beside the journal: the line appended here is not lost.
func (s *Store) addCold(j *Job) (done bool, err error) {
	s.loadMu.Lock()
	warm := s.view != nil
	s.loadMu.Unlock()
	if warm || !plainID(j.ID) {
		return false, nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return false, nil
	}
	gen, ok := canonicalGen(data)
	if !ok {
		return false, nil
	}
	jp := journalPath(s.path)
	if aside, _ := filepath.Glob(jp + ".corrupt-*"); len(aside) > 0 {
		return false, nil
	}
	jdata, err := os.ReadFile(jp)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if int64(len(jdata))+1024 > max(minCompactBytes, int64(len(data))/4) {
		return false, nil
	}
	// Lines of another generation (a crash mid-compaction) come first
	// when there are any: the ordinary path compacts them away.
	if len(jdata) > 0 && !bytes.HasPrefix(jdata, fmt.Appendf(nil, `{"gen":%d,`, gen)) {
		return false, nil
	}
	for j.ID == "" || mentionsID(data, j.ID) || mentionsID(jdata, j.ID) {
		j.ID = newID()
	}
	return true, s.appendLocked([]record{{Gen: gen, Put: j}})
}

// canonicalGen reads the generation from the head this build writes,
// {"version":2,"generation":N,"jobs":...}.
func canonicalGen(data []byte) (int64, bool) {
	head := fmt.Appendf(nil, `{"version":%d,"generation":`, SchemaVersion)
	rest, ok := bytes.CutPrefix(data, head)
	if !ok {
		return 0, false
	}
	digits, _, ok := bytes.Cut(rest[:min(len(rest), 24)], []byte(`,"jobs":`))
	if !ok || len(digits) == 0 {
		return 0, false
	}
	gen, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || gen < 1 {
		return 0, false
	}
	return gen, true
}

// mentionsID reports whether id appears as a job id in compact JSON:
// conservative (a deleted job's id counts), which only costs a new draw.
func mentionsID(data []byte, id string) bool {
	return bytes.Contains(data, []byte(`"id":`+strconv.Quote(id)))
}

// plainID reports whether id is encoded by JSON as itself, so mentionsID
// can search for it byte for byte.
func plainID(id string) bool {
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
