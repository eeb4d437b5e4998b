package sentinel

import (
	"bytes"
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// AssemblerOptions are the ContextAssembler's sources. Every source is
// optional: a missing one yields the field's zero value.
type AssemblerOptions struct {
	MemoryPath    string // workspace MEMORY.md
	HistoryPath   string // workspace memory/HISTORY.md, read by tail only
	AttentionPath string // user_memory/attention.md
	BehaviorsPath string // user_memory/behaviors.md

	// MemoryMaxBytes bounds how much of MEMORY.md is read (default 32 KiB).
	MemoryMaxBytes int
	// HistoryTailBytes is how much of HISTORY.md's end is read (default 16 KiB).
	HistoryTailBytes int
	// AttentionSections are the H2 titles of attention.md given to the
	// planner, in this order (case-insensitive).
	AttentionSections []string
	// BehaviorsLines is how many folded events of behaviors.md are kept
	// (default 20), read from at most BehaviorsTailBytes (default 16 KiB).
	BehaviorsLines     int
	BehaviorsTailBytes int
	// ActiveWindow: sessions active within it are listed (default 2h).
	ActiveWindow time.Duration

	// Sessions lists sessions active since the given time, most recent
	// first (SessionsFrom adapts the session store).
	Sessions func(ctx context.Context, since time.Time) ([]ActiveSession, error)
	// Routines learns candidate routines from the history tail.
	Routines func(history string) []Routine
	// Calendar lists upcoming calendar entries.
	Calendar func(now time.Time) []CalendarEntry
	// Policy provides the snapshot and the in-memory fire history.
	Policy PolicyView

	Clock  clock.Clock
	Logger *slog.Logger
}

// PolicyView is the read side of the NudgePolicy the assembler needs.
type PolicyView interface {
	SnapshotState() policy.Snapshot
	FireHistory() map[string]policy.TopicHistory
}

// Assembler builds the PlannerContext from every signal source, degrading
// each field independently.
type Assembler struct {
	o   AssemblerOptions
	clk clock.Clock
	log *slog.Logger

	mu   sync.Mutex
	last *PlannerDecision
}

// Defaults for the assembler's bounds.
const (
	DefaultMemoryMaxBytes     = 32 << 10
	DefaultHistoryTailBytes   = 16 << 10
	DefaultBehaviorsLines     = 20
	DefaultBehaviorsTailBytes = 16 << 10
	DefaultActiveWindow       = 2 * time.Hour
	attentionMaxBytes         = 256 << 10
	behaviorLineMax           = 240
)

// NewAssembler returns an assembler over opts.
func NewAssembler(opts AssemblerOptions) *Assembler {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MemoryMaxBytes <= 0 {
		opts.MemoryMaxBytes = DefaultMemoryMaxBytes
	}
	if opts.HistoryTailBytes <= 0 {
		opts.HistoryTailBytes = DefaultHistoryTailBytes
	}
	if opts.BehaviorsLines <= 0 {
		opts.BehaviorsLines = DefaultBehaviorsLines
	}
	if opts.BehaviorsTailBytes <= 0 {
		opts.BehaviorsTailBytes = DefaultBehaviorsTailBytes
	}
	if opts.ActiveWindow <= 0 {
		opts.ActiveWindow = DefaultActiveWindow
	}
	return &Assembler{o: opts, clk: opts.Clock, log: opts.Logger}
}

// Assemble builds the context. It never fails; each source that is missing
// or broken leaves its field empty and is logged at debug level.
func (a *Assembler) Assemble(ctx context.Context) PlannerContext {
	now := a.clk.Now()
	pc := PlannerContext{Now: now}
	degrade := func(field string, err error) {
		a.log.Debug("sentinel context: field degraded", "field", field, "err", err)
	}

	if a.o.MemoryPath != "" {
		if b, err := memory.HeadBytes(a.o.MemoryPath, a.o.MemoryMaxBytes); err != nil {
			degrade("memory_md", err)
		} else {
			pc.MemoryMD = string(b)
		}
	}
	if a.o.HistoryPath != "" {
		if b, err := memory.TailBytes(a.o.HistoryPath, a.o.HistoryTailBytes); err != nil {
			degrade("history_md_recent", err)
		} else {
			pc.HistoryMDRecent = string(b)
		}
	}
	safe(a.log, "routines", func() {
		if a.o.Routines != nil {
			pc.Routines = a.o.Routines(pc.HistoryMDRecent)
		}
	})
	safe(a.log, "active_sessions", func() {
		if a.o.Sessions != nil {
			ss, err := a.o.Sessions(ctx, now.Add(-a.o.ActiveWindow))
			if err != nil {
				degrade("active_sessions", err)
				return
			}
			pc.ActiveSessions = ss
			// The seam may ignore the bound; enforce it and the order here.
			kept := pc.ActiveSessions[:0]
			for _, s := range pc.ActiveSessions {
				if !s.LastActive.Before(now.Add(-a.o.ActiveWindow)) {
					kept = append(kept, s)
				}
			}
			pc.ActiveSessions = kept
			sort.SliceStable(pc.ActiveSessions, func(i, j int) bool {
				return pc.ActiveSessions[i].LastActive.After(pc.ActiveSessions[j].LastActive)
			})
		}
	})
	safe(a.log, "calendar", func() {
		if a.o.Calendar != nil {
			pc.Calendar = a.o.Calendar(now)
		}
	})
	safe(a.log, "nudge_policy_state", func() {
		if a.o.Policy != nil {
			pc.NudgePolicyState = a.o.Policy.SnapshotState()
			pc.FireHistory = a.o.Policy.FireHistory()
		}
	})
	if a.o.AttentionPath != "" && len(a.o.AttentionSections) > 0 {
		if b, err := memory.HeadBytes(a.o.AttentionPath, attentionMaxBytes); err != nil {
			degrade("attention_md", err)
		} else {
			pc.AttentionMD = SelectSections(string(b), a.o.AttentionSections)
		}
	}
	if a.o.BehaviorsPath != "" {
		if b, err := memory.TailBytes(a.o.BehaviorsPath, a.o.BehaviorsTailBytes); err != nil {
			degrade("behaviors_recent", err)
		} else {
			pc.BehaviorsRecent = FoldBehaviors(b, a.o.BehaviorsLines)
		}
	}
	if d, ok := a.LastDecision(); ok {
		pc.LastDecision = &d
	}
	return pc
}

// RememberLastDecision stores d for the next tick's context.
func (a *Assembler) RememberLastDecision(d PlannerDecision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = &d
}

// LastDecision returns the remembered decision.
func (a *Assembler) LastDecision() (PlannerDecision, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		return PlannerDecision{}, false
	}
	return *a.last, true
}

// safe runs a caller-supplied source, turning a panic into a degraded field:
// one broken integration must not cost the whole tick.
func safe(log *slog.Logger, field string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("sentinel context: source panicked; field left empty", "field", field, "panic", r)
		}
	}()
	fn()
}

// SelectSections returns the H2 sections of md whose titles match names
// (case-insensitive, ignoring surrounding space), in the order of names.
func SelectSections(md string, names []string) string {
	sections := map[string]string{}
	var title string
	var body strings.Builder
	flush := func() {
		if title != "" {
			key := strings.ToLower(strings.TrimSpace(title))
			if _, dup := sections[key]; !dup {
				sections[key] = strings.TrimSpace(body.String())
			}
		}
		body.Reset()
	}
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			flush()
			title = strings.TrimPrefix(line, "## ")
			continue
		}
		if strings.HasPrefix(line, "# ") {
			flush()
			title = ""
			continue
		}
		if title != "" {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	var out strings.Builder
	for _, n := range names {
		key := strings.ToLower(strings.TrimSpace(n))
		if b, ok := sections[key]; ok && b != "" {
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			out.WriteString("## " + strings.TrimSpace(n) + "\n" + b + "\n")
		}
	}
	return out.String()
}

// FoldBehaviors folds the tail of behaviors.md to one line per event and
// keeps the last n. An event starts at a list item ("- ", "* ") or a
// non-indented line; indented lines continue the previous event.
func FoldBehaviors(tail []byte, n int) string {
	var events []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			events = append(events, oneLine(cur.String(), behaviorLineMax))
			cur.Reset()
		}
	}
	for line := range bytes.SplitSeq(tail, []byte{'\n'}) {
		s := string(bytes.TrimRight(line, "\r"))
		trimmed := strings.TrimSpace(s)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "<!--"):
			flush()
		case strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t"):
			if cur.Len() > 0 {
				cur.WriteByte(' ')
			}
			cur.WriteString(trimmed)
		default:
			flush()
			cur.WriteString(strings.TrimLeft(trimmed, "-* "))
		}
	}
	flush()
	if len(events) > n {
		events = events[len(events)-n:]
	}
	if len(events) == 0 {
		return ""
	}
	return "- " + strings.Join(events, "\n- ") + "\n"
}
