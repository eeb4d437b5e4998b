package cron

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/jsonl"
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
type RunLog struct {
	jl     *jsonl.File
	logged bool
}

// NewRunLog returns the run log at path (cron/runs.jsonl). logger (at most
// one; a Service otherwise lends its own) is warned about torn lines.
func NewRunLog(path string, logger ...*slog.Logger) *RunLog {
	if len(logger) > 0 && logger[0] != nil {
		return &RunLog{jl: jsonl.New(path, logger[0]), logged: true}
	}
	return &RunLog{jl: jsonl.New(path, nil)}
}

// withLogger is l, warning to log unless l already has a logger.
func (l *RunLog) withLogger(log *slog.Logger) *RunLog {
	if l.logged {
		return l
	}
	return NewRunLog(l.jl.Path(), log)
}

// Append writes r as one line (jsonl.AppendLine: one write under O_APPEND,
// on a fresh line even after a torn one).
func (l *RunLog) Append(r Run) error {
	if err := l.jl.Append(r); err != nil {
		return fmt.Errorf("cron: append run: %w", err)
	}
	return nil
}

// Tail returns the last n runs (oldest first), only those of jobID when it
// is not empty. It reads the file backwards in chunks, so its cost follows
// n, not the log's size. Torn lines (a crash mid-write) are skipped.
func (l *RunLog) Tail(jobID string, n int) ([]Run, error) {
	runs, err := jsonl.Last(l.jl, n, func(r *Run) bool { return jobID == "" || r.JobID == jobID })
	if err != nil {
		return nil, fmt.Errorf("cron: runs log: %w", err)
	}
	return runs, nil
}

// All streams every run to fn, oldest first; used by tests and audits.
func (l *RunLog) All(fn func(Run)) error {
	err := l.jl.Forward(func(line []byte) bool {
		var r Run
		if l.jl.Decode(line, &r) {
			fn(r)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("cron: runs log: %w", err)
	}
	return nil
}
