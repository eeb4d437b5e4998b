package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/raven-agent/raven/internal/memory"
)

// TickRecord is one line of sentinel/ticks.jsonl, read by
// `raven sentinel explain`.
type TickRecord struct {
	Time          time.Time `json:"time"`
	Action        Action    `json:"action"`
	Reason        string    `json:"reason,omitempty"`
	Priority      Priority  `json:"priority,omitempty"`
	Score         float64   `json:"score"`
	Route         string    `json:"route"`
	Message       string    `json:"message,omitempty"`
	Target        string    `json:"target,omitempty"`
	Slot          string    `json:"slot,omitempty"`    // the plan slot acted on
	Allowed       *bool     `json:"allowed,omitempty"` // nil: the policy was not asked
	Layer         string    `json:"layer,omitempty"`
	VerdictReason string    `json:"verdict_reason,omitempty"`
	Delivered     bool      `json:"delivered"`
	Queued        bool      `json:"queued,omitempty"`
	NudgeID       string    `json:"nudge_id,omitempty"`
	Error         string    `json:"error,omitempty"`
	Notes         []string  `json:"notes,omitempty"`
}

// Record converts an outcome to its tick-log line.
func (o TickOutcome) Record() TickRecord {
	d := o.Decision
	rec := TickRecord{
		Time: d.At, Action: d.Action, Reason: d.Reason, Priority: d.Priority, Score: d.ProactivityScore,
		Route: o.Route, Message: firstNonEmpty(d.NudgeMessage, d.SpawnTask), Target: d.TargetSession,
		Slot: d.SlotID, NudgeID: o.NudgeID, Notes: o.Notes,
	}
	if o.Verdict != nil {
		allowed := o.Verdict.Allow
		rec.Allowed, rec.Layer, rec.VerdictReason = &allowed, o.Verdict.Layer, o.Verdict.Reason
	}
	if o.Result != nil {
		rec.Delivered, rec.Queued, rec.Error = o.Result.Delivered, o.Result.Queued, o.Result.Error
	}
	return rec
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// tickLogMax rotates ticks.jsonl to ticks.jsonl.1 beyond this size, so the
// log a CLI reads by tail cannot grow without bound.
const tickLogMax = 4 << 20

func (r *Runner) logTick(out TickOutcome) {
	if out.Decision.At.IsZero() {
		out.Decision.At = r.clk.Now()
	}
	if r.o.OnTick != nil {
		r.o.OnTick(out.Record())
	}
	if r.o.TickLogPath == "" {
		return
	}
	if err := AppendTick(r.o.TickLogPath, out.Record()); err != nil {
		r.log.Warn("sentinel: tick log append failed", "path", r.o.TickLogPath, "err", err)
	}
}

// AppendTick appends rec as one JSON line in a single write (O_APPEND), so
// concurrent writers from two processes never interleave within a line.
func AppendTick(path string, rec TickRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("sentinel: encode tick: %w", err)
	}
	line = append(line, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sentinel: mkdir for %s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() > tickLogMax {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sentinel: open %s: %w", path, err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("sentinel: append %s: %w", path, err)
	}
	return f.Close()
}

// ReadTicks returns the last n tick records, oldest first, reading only the
// file's tail. Malformed lines are skipped.
func ReadTicks(path string, n int) ([]TickRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	tail, err := memory.TailBytes(path, min(n*4096, 16<<20))
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(tail), []byte{'\n'})
	out := make([]TickRecord, 0, min(n, len(lines)))
	for i := max(0, len(lines)-n); i < len(lines); i++ {
		var rec TickRecord
		if json.Unmarshal(lines[i], &rec) == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}
