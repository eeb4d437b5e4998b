package cron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Run is one line of cron/runs.jsonl: the record of one fire.
type Run struct {
	JobID       string    `json:"job_id"`
	Name        string    `json:"name,omitempty"`
	ScheduledAt time.Time `json:"scheduled_at"`
	// FiredAt is when the handler started (RFC 3339 with nanoseconds).
	FiredAt    time.Time `json:"fired_at"`
	FinishedAt time.Time `json:"finished_at"`
	PID        int       `json:"pid"`
	Outcome    Status    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	Forced     bool      `json:"forced,omitempty"`
}

// RunLog appends to and tails runs.jsonl.
type RunLog struct{ path string }

// NewRunLog returns the run log at path (cron/runs.jsonl).
func NewRunLog(path string) *RunLog { return &RunLog{path: path} }

// Append writes r as one line. The file is opened O_APPEND and the line is
// one write(2), so lines from concurrent processes never interleave.
func (l *RunLog) Append(r Run) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cron: encode run: %w", err)
	}
	line = append(line, '\n')
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("cron: runs dir: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("cron: open runs log: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("cron: append run: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cron: close runs log: %w", err)
	}
	return nil
}

// tailChunk is how much of the file's end is read per step.
const tailChunk = 64 << 10

// Tail returns the last n runs (oldest first), only those of jobID when it
// is not empty. It reads the file backwards in chunks, so its cost follows
// n, not the log's size. Malformed lines (a crash mid-write) are skipped.
func (l *RunLog) Tail(jobID string, n int) ([]Run, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron: open runs log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cron: stat runs log: %w", err)
	}
	var (
		out  []Run // newest first
		rest []byte
		pos  = fi.Size()
	)
	take := func(line []byte) bool {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return false
		}
		var r Run
		if json.Unmarshal(line, &r) != nil || (jobID != "" && r.JobID != jobID) {
			return false
		}
		out = append(out, r)
		return len(out) >= n
	}
	for pos > 0 && len(out) < n {
		size := int64(tailChunk)
		if pos < size {
			size = pos
		}
		pos -= size
		buf := make([]byte, size, int(size)+len(rest))
		if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("cron: read runs log: %w", err)
		}
		buf = append(buf, rest...)
		// Everything after the first newline is whole lines; the head may
		// continue in the previous chunk.
		for {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if take(buf[i+1:]) {
				break
			}
			buf = buf[:i]
		}
		rest = buf
		if len(out) >= n {
			break
		}
	}
	if len(out) < n && pos == 0 {
		take(rest)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// All streams every run to fn, oldest first; used by tests and audits.
func (l *RunLog) All(fn func(Run)) error {
	data, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cron: read runs log: %w", err)
	}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var r Run
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &r) == nil {
			fn(r)
		}
	}
	return nil
}
