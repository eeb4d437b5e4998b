package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what one run measured. Every figure comes from the runtime's
// own outcomes (tick results, deliveries at the owner's surface, the policy
// snapshot), never from the scenario's intent.
type Report struct {
	Scenario string `json:"scenario"`
	// Config names the configuration: "default" plus the scenario's
	// overrides, or the --compare file.
	Config   string   `json:"config"`
	Planner  string   `json:"planner"`
	Start    string   `json:"start"`
	Days     int      `json:"days"`
	Seed     int64    `json:"seed"`
	Zones    []string `json:"zones"`
	Changed  []string `json:"config_changed"` // keys differing from the default
	DayQuota int      `json:"day_quota"`

	Ticks     TickStats     `json:"ticks"`
	Nudges    NudgeStats    `json:"nudges"`
	Owner     OwnerStats    `json:"owner"`
	Deadlines DeadlineStats `json:"deadlines"`
	Quiet     QuietStats    `json:"quiet_hours"`
	// DuplicateDeliveries counts nudges shown to the owner more than once
	// (same nudge id) plus deadline slots delivered more than once.
	DuplicateDeliveries int              `json:"duplicate_deliveries"`
	Model               ModelStats       `json:"model"`
	Adaptive            AdaptiveStats    `json:"adaptive"`
	Learned             LearnedStats     `json:"learned"`
	Outbox              OutboxStats      `json:"outbox"`
	Inputs              InputStats       `json:"planner_inputs"`
	Cron                CronStats        `json:"cron"`
	Heartbeat           HeartbeatStats   `json:"heartbeat"`
	PerDay              []DayStats       `json:"per_day"`
	Travel              []TravelReport   `json:"travel,omitempty"`
	Outages             []OutageReport   `json:"outages,omitempty"`
	WallMillis          int64            `json:"wall_ms"`
	deadlineSlots       map[string]*Slot `json:"-"`
}

// InputStats are what the planner's context held from the optional
// inputs (seen once a day, at the first tick from 09:00).
type InputStats struct {
	// CalendarEvents summed over the days seen; CalendarDays with any.
	CalendarEvents int `json:"calendar_events"`
	CalendarDays   int `json:"calendar_days"`
	// AnalysisCalls the daily analysis made; AnalysisDays its sections
	// reached the planner.
	AnalysisCalls int `json:"analysis_calls"`
	AnalysisDays  int `json:"analysis_days"`
	// Routines the planner was shown (the routine store's).
	Routines []string `json:"routines,omitempty"`
}

// TickStats count the Sentinel's ticks and what they cost.
type TickStats struct {
	Total int `json:"total"`
	// ByRoute: skip, nudge, fast_path_quiet_hours, fast_path_dedup, scheduled_fire, deadline_fallback…
	ByRoute map[string]int `json:"by_route"`
	// Quiet are ticks inside quiet hours with no high-priority deadline
	// due; QuietModelCalls every model call they made (the figure: 0).
	Quiet           int `json:"quiet"`
	QuietModelCalls int `json:"quiet_model_calls"`
	// Unchanged are ticks whose context matched the last skip's;
	// UnchangedModelCalls the planner calls they made (the figure: 0).
	// The day's task discovery, a daily batch, may run on such a tick and
	// is counted under model.by_origin.discovery.
	Unchanged           int `json:"unchanged"`
	UnchangedModelCalls int `json:"unchanged_model_calls"`
	PlannerCalls        int `json:"planner_calls"`
}

// NudgeStats follow the Sentinel's proposals through the policy.
type NudgeStats struct {
	Proposed      int            `json:"proposed"`
	Delivered     int            `json:"delivered"`
	Queued        int            `json:"queued"`
	Denied        int            `json:"denied"`
	DeniedByLayer map[string]int `json:"denied_by_layer"`
	// MaxDeliveredPerDay is the most delivered on one local day.
	MaxDeliveredPerDay int `json:"max_delivered_per_day"`
}

// OwnerStats are the owner's reactions to the nudges they saw.
type OwnerStats struct {
	Seen      int `json:"seen"`
	Accepted  int `json:"accepted"`
	Dismissed int `json:"dismissed"`
	Ignored   int `json:"ignored"`
	// AcceptanceRate is accepted / seen.
	AcceptanceRate float64 `json:"acceptance_rate"`
	Messages       int     `json:"messages"`
}

// DeadlineStats are the day plan's deadline slots and whether they fired.
type DeadlineStats struct {
	HighSlots     int     `json:"high_slots"`
	HighDelivered int     `json:"high_delivered"`
	HighMissed    int     `json:"high_missed"`
	HighRate      float64 `json:"high_delivered_rate"`
	OtherSlots    int     `json:"other_slots"`
	OtherHit      int     `json:"other_delivered"`
	// Duplicates: deliveries of a deadline slot beyond its first.
	Duplicates int `json:"duplicates"`
	// Expected are the scenario's deadlines; Unplanned those no day plan
	// showed on their day (a line the deadline producer did not read).
	Expected  int      `json:"expected"`
	Unplanned []string `json:"unplanned,omitempty"`
	Slots     []*Slot  `json:"slots,omitempty"`
}

// Slot is one deadline slot of a day plan.
type Slot struct {
	ID         string `json:"id"`
	Message    string `json:"message"`
	Priority   string `json:"priority"`
	Window     string `json:"window"`
	Delivered  bool   `json:"delivered"`
	At         string `json:"delivered_at,omitempty"`
	Route      string `json:"route,omitempty"`
	Deliveries int    `json:"deliveries"`
	end        time.Time
}

// QuietStats are Sentinel deliveries inside quiet hours.
type QuietStats struct {
	Deliveries        int `json:"deliveries"`
	NonHighDeliveries int `json:"non_high_deliveries"`
	// Cron replies the owner scheduled into quiet hours (requested, so allowed).
	CronDeliveries int `json:"cron_deliveries"`
}

// ModelStats are model calls and tokens by origin.
type ModelStats struct {
	Calls        int              `json:"calls"`
	InputTokens  int              `json:"input_tokens"`
	OutputTokens int              `json:"output_tokens"`
	ByOrigin     map[string]Usage `json:"by_origin"`
}

// AdaptiveStats show how the hour-quota multiplier moved.
type AdaptiveStats struct {
	Start   float64  `json:"start"`
	End     float64  `json:"end"`
	Min     float64  `json:"min"`
	Max     float64  `json:"max"`
	Changes []Change `json:"changes,omitempty"`
	// FeedbackSamples and AcceptanceRate are the tracker's at the end.
	FeedbackSamples int     `json:"feedback_samples"`
	AcceptanceRate  float64 `json:"acceptance_rate"`
}

// Change is one move of the multiplier.
type Change struct {
	At   string  `json:"at"`
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// LearnedStats are the preferences learned from the owner's feedback.
type LearnedStats struct {
	DNDHours    []int           `json:"learned_dnd_hours"`
	Preferences json.RawMessage `json:"preferences,omitempty"`
	// Changes say when each was learned: the DND hours after a tick,
	// preferences.json after the owner's dismissal rewrote it.
	Changes []LearnedChange `json:"changes,omitempty"`
}

// LearnedChange is one move of the learned preferences.
type LearnedChange struct {
	At   string `json:"at"`
	What string `json:"what"`
}

// OutboxStats are the messages kept while the owner was away.
type OutboxStats struct {
	Shown          int     `json:"shown"`
	MaxWaitMinutes float64 `json:"max_wait_minutes"`
	AvgWaitMinutes float64 `json:"avg_wait_minutes"`
	LeftAtEnd      int     `json:"left_at_end"`
	totalWait      time.Duration
}

// CronStats are the owner's scheduled jobs.
type CronStats struct {
	Fires   int `json:"fires"`
	Decayed int `json:"decayed"`
}

// HeartbeatStats are the heartbeat's ticks.
type HeartbeatStats struct {
	Ticks      int `json:"ticks"`
	Ran        int `json:"ran"`
	ModelCalls int `json:"model_calls"`
	// QuietTicks fell in the owner's quiet hours; QuietModelCalls is what
	// they cost (heartbeat.quiet_hours on: 0).
	QuietTicks      int `json:"quiet_ticks"`
	QuietModelCalls int `json:"quiet_model_calls"`
}

// DayStats are one local day.
type DayStats struct {
	Date       string  `json:"date"`
	Proposed   int     `json:"proposed"`
	Delivered  int     `json:"delivered"`
	Denied     int     `json:"denied"`
	Accepted   int     `json:"accepted"`
	Dismissed  int     `json:"dismissed"`
	Ignored    int     `json:"ignored"`
	ModelCalls int     `json:"sentinel_model_calls"` // the ticks' (planner, discovery)
	Multiplier float64 `json:"multiplier_end"`
}

// TravelReport is one time-zone change.
type TravelReport struct {
	At   string `json:"at"`
	From string `json:"from"`
	To   string `json:"to"`
}

// OutageReport is one planner outage and what the ticks did during it.
type OutageReport struct {
	From          string `json:"from"`
	To            string `json:"to"`
	FailedCalls   int    `json:"failed_calls"`
	FallbackFires int    `json:"fallback_fires"`
}

// rows are the report's lines for the text and side-by-side views.
func (r *Report) rows() [][2]string {
	pct := func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
	layers := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, ", ")
	}
	origins := func(m map[string]Usage) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			u := m[k]
			parts = append(parts, fmt.Sprintf("%s %d (%d+%d tok)", k, u.Calls, u.InputTokens, u.OutputTokens))
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, ", ")
	}
	mult := fmt.Sprintf("%.2f → %.2f (min %.2f)", r.Adaptive.Start, r.Adaptive.End, r.Adaptive.Min)
	if len(r.Adaptive.Changes) > 0 {
		c := r.Adaptive.Changes[0]
		mult += fmt.Sprintf(", first move %s", c.At)
	}
	return [][2]string{
		{"config", r.Config},
		{"planner", r.Planner},
		{"days / seed", fmt.Sprintf("%d from %s / %d", r.Days, r.Start, r.Seed)},
		{"ticks", fmt.Sprintf("%d (planner called %d)", r.Ticks.Total, r.Ticks.PlannerCalls)},
		{"nudges proposed", fmt.Sprint(r.Nudges.Proposed)},
		{"nudges delivered", fmt.Sprintf("%d (max %d/day, quota %d)", r.Nudges.Delivered, r.Nudges.MaxDeliveredPerDay, r.DayQuota)},
		{"nudges queued", fmt.Sprint(r.Nudges.Queued)},
		{"denied by layer", fmt.Sprintf("%d: %s", r.Nudges.Denied, layers(r.Nudges.DeniedByLayer))},
		{"owner saw", fmt.Sprintf("%d: accepted %d, dismissed %d, ignored %d", r.Owner.Seen, r.Owner.Accepted, r.Owner.Dismissed, r.Owner.Ignored)},
		{"acceptance rate", pct(r.Owner.AcceptanceRate)},
		{"high deadline slots", fmt.Sprintf("%d/%d delivered (%s), missed %d", r.Deadlines.HighDelivered, r.Deadlines.HighSlots, pct(r.Deadlines.HighRate), r.Deadlines.HighMissed)},
		{"other deadline slots", fmt.Sprintf("%d/%d delivered", r.Deadlines.OtherHit, r.Deadlines.OtherSlots)},
		{"deadlines planned", fmt.Sprintf("%d/%d on their day", r.Deadlines.Expected-len(r.Deadlines.Unplanned), r.Deadlines.Expected)},
		{"quiet-hour deliveries", fmt.Sprintf("%d (non-high %d; cron %d)", r.Quiet.Deliveries, r.Quiet.NonHighDeliveries, r.Quiet.CronDeliveries)},
		{"duplicate deliveries", fmt.Sprint(r.DuplicateDeliveries)},
		{"model calls", fmt.Sprintf("%d (%d in + %d out tokens)", r.Model.Calls, r.Model.InputTokens, r.Model.OutputTokens)},
		{"  by origin", origins(r.Model.ByOrigin)},
		{"  quiet / unchanged ticks", fmt.Sprintf("%d calls on %d quiet ticks, %d on %d unchanged", r.Ticks.QuietModelCalls, r.Ticks.Quiet, r.Ticks.UnchangedModelCalls, r.Ticks.Unchanged)},
		{"adaptive multiplier", mult},
		{"learned DND hours", fmt.Sprint(r.Learned.DNDHours)},
		{"outbox", fmt.Sprintf("%d shown, wait avg %.0fm max %.0fm, %d left", r.Outbox.Shown, r.Outbox.AvgWaitMinutes, r.Outbox.MaxWaitMinutes, r.Outbox.LeftAtEnd)},
		{"planner inputs", fmt.Sprintf("calendar %d events on %d days; daily analysis %d calls, in context %d days; routines %q",
			r.Inputs.CalendarEvents, r.Inputs.CalendarDays, r.Inputs.AnalysisCalls, r.Inputs.AnalysisDays, r.Inputs.Routines)},
		{"cron / heartbeat", fmt.Sprintf("%d fires (%d decayed) / %d ticks, %d ran, %d model calls (%d on %d quiet ticks)", r.Cron.Fires, r.Cron.Decayed, r.Heartbeat.Ticks, r.Heartbeat.Ran, r.Heartbeat.ModelCalls, r.Heartbeat.QuietModelCalls, r.Heartbeat.QuietTicks)},
		{"wall time", fmt.Sprintf("%dms", r.WallMillis)},
	}
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "raven simulate: %s\n\n", r.Scenario)
	for _, row := range r.rows() {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "day\tproposed\tdelivered\tdenied\taccepted\tdismissed\tignored\tsentinel calls\tmultiplier")
	for _, d := range r.PerDay {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\n", d.Date, d.Proposed, d.Delivered, d.Denied, d.Accepted, d.Dismissed, d.Ignored, d.ModelCalls, d.Multiplier)
	}
	for _, t := range r.Travel {
		fmt.Fprintf(tw, "\ntravel at %s: %s → %s\n", t.At, t.From, t.To)
	}
	for _, o := range r.Outages {
		fmt.Fprintf(tw, "\nplanner outage %s – %s: %d failed calls, %d high-priority deadline fallback fires\n", o.From, o.To, o.FailedCalls, o.FallbackFires)
	}
	if len(r.Learned.Changes) > 0 {
		fmt.Fprintln(tw, "\nlearned from the owner's feedback:")
		for _, c := range r.Learned.Changes {
			fmt.Fprintf(tw, "  %s\t%s\n", c.At, c.What)
		}
	}
	return tw.Flush()
}

// WriteCompare prints two runs of one scenario side by side.
func WriteCompare(w io.Writer, a, b *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "raven simulate: %s — same owner, same seed, two configs\n\n", a.Scenario)
	ra, rb := a.rows(), b.rows()
	fmt.Fprintf(tw, "\tA\tB\n")
	for i := range ra {
		// Long values wrap within their column, so B stays beside A.
		la, lb := wrapWords(ra[i][1], compareColumn), wrapWords(rb[i][1], compareColumn)
		for j := range max(len(la), len(lb)) {
			label := ""
			if j == 0 {
				label = ra[i][0]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", label, at(la, j), at(lb, j))
		}
	}
	return tw.Flush()
}

// compareColumn is the widest a --compare column grows before wrapping.
const compareColumn = 56

// wrapWords breaks s at spaces into lines of at most width bytes (a word
// longer than width stands alone).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

func at(ss []string, i int) string {
	if i < len(ss) {
		return ss[i]
	}
	return ""
}
