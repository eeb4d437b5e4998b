package sentinel

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/raven-agent/raven/internal/jsonl"
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

// AppendTick appends rec as one JSON line (jsonl.AppendLine: one write
// under O_APPEND, on a fresh line even after a torn one).
func AppendTick(path string, rec TickRecord) error {
	if st, err := os.Stat(path); err == nil && st.Size() > tickLogMax {
		_ = os.Rename(path, path+".1")
	}
	if err := jsonl.New(path, nil).Append(rec); err != nil {
		return fmt.Errorf("sentinel: tick log: %w", err)
	}
	return nil
}

// ReadTicks returns the last n tick records, oldest first, reading the file
// backwards only as far as needed. Torn lines are skipped; logger (may be
// nil) is warned about them.
func ReadTicks(path string, n int, logger ...*slog.Logger) ([]TickRecord, error) {
	var l *slog.Logger
	if len(logger) > 0 {
		l = logger[0]
	}
	recs, err := jsonl.Last[TickRecord](jsonl.New(path, l), n, nil)
	if err != nil {
		return nil, fmt.Errorf("sentinel: tick log: %w", err)
	}
	return recs, nil
}
