// Package simulate runs a scenario — a simulated owner, their notes, jobs and
// a planner — through the assembled runtime on a virtual clock (`raven simulate`).
package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/strictjson"
)

// ErrScenario marks a scenario file that cannot be run: unreadable, not
// YAML/JSON, an unknown key, or a value out of range.
var ErrScenario = errors.New("simulate: invalid scenario")

// MaxScenarioBytes bounds a scenario file.
const MaxScenarioBytes = 1 << 20

// Planner kinds.
const (
	// PlannerNudgeEveryTick is the policy-testing stub: every tick it
	// proposes a nudge (on a due deadline slot when one is offered), so
	// what reaches the owner is decided by the policy alone.
	PlannerNudgeEveryTick = "nudge-every-tick"
	// PlannerScripted answers the decisions listed in planner.script at
	// their times; between them it reminds of a deadline slot the prompt
	// lists as due (what the prompt asks of a model) and skips otherwise.
	PlannerScripted = "scripted"
	// PlannerSkip skips every tick (an idle planner: what the ticks cost).
	PlannerSkip = "skip"
	// PlannerModel is the configured model (config "model" or
	// sentinel.planner_model): a real run, real tokens.
	PlannerModel = "model"
)

// Scenario is one simulated stretch of an owner's life. Times of day are the
// owner's local time ("HH:MM", in Timezone, or the zone they travelled to).
type Scenario struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	// Start is the first simulated day, YYYY-MM-DD (default 2026-03-02, a Monday).
	Start string `yaml:"start" json:"start"`
	// Days simulated (default 7, at most 62).
	Days int `yaml:"days" json:"days"`
	// Seed of the owner's random choices (default 1): a run is reproducible.
	Seed int64 `yaml:"seed" json:"seed"`
	// Timezone of the owner (IANA name, default UTC).
	Timezone string `yaml:"timezone" json:"timezone"`
	// Travel changes the owner's time zone mid-run: the runtime restarts
	// with the new zone, as an owner's gateway does after they change it.
	Travel []Travel `yaml:"travel" json:"travel"`

	Owner Owner `yaml:"owner" json:"owner"`
	// Memory is MEMORY.md at the start; Deadlines are appended to it as
	// dated lines ("- 2026-03-04 15:00 dentist").
	Memory    string     `yaml:"memory" json:"memory"`
	Deadlines []Deadline `yaml:"deadlines" json:"deadlines"`
	// Cron are jobs the owner scheduled.
	Cron []CronJob `yaml:"cron" json:"cron"`
	// Heartbeat is HEARTBEAT.md (its tasks cost a model call per heartbeat tick).
	Heartbeat string `yaml:"heartbeat" json:"heartbeat"`

	Planner Planner `yaml:"planner" json:"planner"`
	// Config overrides, as `raven config set KEY VALUE` takes them, applied
	// to the default config.
	Config map[string]string `yaml:"config" json:"config"`
}

// Travel is a time-zone change at a day's local time (in the old zone).
type Travel struct {
	Day      int    `yaml:"day" json:"day"`
	At       string `yaml:"at" json:"at"`
	Timezone string `yaml:"timezone" json:"timezone"`
}

// Owner is the simulated person.
type Owner struct {
	// Attached are the windows the owner has a surface open (a terminal or
	// TUI); outside them nudges wait in the outbox until the next attach.
	Attached []Window `yaml:"attached" json:"attached"`
	// Reactions decide, per nudge the owner sees, accept / dismiss / ignore.
	Reactions Reactions `yaml:"reactions" json:"reactions"`
	// Messages the owner sends (each attaches them for 30 minutes when they
	// are not attached already).
	Messages []Message `yaml:"messages" json:"messages"`
	// ReactAfter: how long after seeing a nudge the owner answers (default 2m).
	ReactAfter string `yaml:"react_after" json:"react_after"`
}

// Window is a daily window [From, To) on some weekdays (empty: every day);
// To before From wraps midnight. Surface is cli (default) or tui.
type Window struct {
	Days    []string `yaml:"days" json:"days"`
	From    string   `yaml:"from" json:"from"`
	To      string   `yaml:"to" json:"to"`
	Surface string   `yaml:"surface" json:"surface"`
}

// Reactions are probabilities of accept, dismiss and ignore. The first
// matching topic wins, then the first matching hour window, then Default.
type Reactions struct {
	Default Odds `yaml:"default" json:"default"`
	// Hours are windows of the owner's local day with their own odds.
	Hours []HourOdds `yaml:"hours" json:"hours"`
	// Topics match a nudge whose topic or message contains the key
	// (case-insensitive); "deadline" matches every deadline reminder.
	Topics map[string]Odds `yaml:"topics" json:"topics"`
}

// Odds of the three reactions; they are normalised, so 1/1/2 works.
type Odds struct {
	Accept  float64 `yaml:"accept" json:"accept"`
	Dismiss float64 `yaml:"dismiss" json:"dismiss"`
	Ignore  float64 `yaml:"ignore" json:"ignore"`
}

// HourOdds are odds inside a window of the day.
type HourOdds struct {
	From string `yaml:"from" json:"from"`
	To   string `yaml:"to" json:"to"`
	Odds `yaml:",inline"`
}

// Message is something the owner says: on Day (0-based) or on the listed
// weekdays (every day when both are empty), at a local time.
type Message struct {
	Day  *int     `yaml:"day" json:"day"`
	Days []string `yaml:"days" json:"days"`
	At   string   `yaml:"at" json:"at"`
	Text string   `yaml:"text" json:"text"`
}

// Deadline is a dated line in MEMORY.md. Due is "YYYY-MM-DD" or
// "YYYY-MM-DD HH:MM" (owner's local time). Line, when set, is the line as
// the owner wrote it ("dentist Friday 15:00, confirm by phone"): MEMORY.md
// holds it instead of "Due Text", and Due is what it must resolve to — a
// deadline the plan never shows on that day counts as unplanned.
type Deadline struct {
	Due  string `yaml:"due" json:"due"`
	Text string `yaml:"text" json:"text"`
	Line string `yaml:"line" json:"line"`
}

// CronJob is a job as `raven cron add` takes it.
type CronJob struct {
	Name    string `yaml:"name" json:"name"`
	Message string `yaml:"message" json:"message"`
	Cron    string `yaml:"cron" json:"cron"`
	Every   string `yaml:"every" json:"every"`
	At      string `yaml:"at" json:"at"`
	// TZ of a cron expression (default the owner's zone).
	TZ string `yaml:"tz" json:"tz"`
}

// Planner chooses the Sentinel's model.
type Planner struct {
	// Kind: nudge-every-tick (default), scripted, skip or model.
	Kind   string     `yaml:"kind" json:"kind"`
	Script []Decision `yaml:"script" json:"script"`
	// Outages are windows the planner's model fails (HTTP 503).
	Outages []Outage `yaml:"outages" json:"outages"`
}

// Decision is a scripted planner answer for the first tick at or after
// Day/At (local); it is used once.
type Decision struct {
	Day      int    `yaml:"day" json:"day"`
	At       string `yaml:"at" json:"at"`
	Action   string `yaml:"action" json:"action"`
	Message  string `yaml:"message" json:"message"`
	Topic    string `yaml:"topic" json:"topic"`
	Priority string `yaml:"priority" json:"priority"`
}

// Outage is a window on Day (0-based), local time; To "24:00" ends it at midnight.
type Outage struct {
	Day  int    `yaml:"day" json:"day"`
	From string `yaml:"from" json:"from"`
	To   string `yaml:"to" json:"to"`
}

// Load reads a scenario from a .yaml/.yml or .json file. Unknown keys are
// refused, naming their line (YAML) or key path (JSON).
func Load(path string) (Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxScenarioBytes+1)); err != nil {
		return Scenario{}, fmt.Errorf("%w: %s: %w", ErrScenario, path, err)
	}
	if buf.Len() > MaxScenarioBytes {
		return Scenario{}, fmt.Errorf("%w: %s is larger than 1 MiB", ErrScenario, path)
	}
	isJSON := strings.EqualFold(filepath.Ext(path), ".json")
	s, err := Parse(buf.Bytes(), isJSON)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse decodes a scenario (JSON when isJSON, else YAML), strictly, and
// validates it.
func Parse(data []byte, isJSON bool) (Scenario, error) {
	var s Scenario
	if isJSON {
		if err := strictjson.Decode(data, &s); err != nil {
			return s, fmt.Errorf("%w: %w", ErrScenario, err)
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
			return s, fmt.Errorf("%w: %w", ErrScenario, err)
		}
	}
	if err := s.validate(); err != nil {
		return s, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	return s, nil
}

func (s *Scenario) validate() error {
	if s.Start == "" {
		s.Start = "2026-03-02"
	}
	if _, err := time.Parse(time.DateOnly, s.Start); err != nil {
		return fmt.Errorf("start %q: want YYYY-MM-DD", s.Start)
	}
	if s.Days == 0 {
		s.Days = 7
	}
	if s.Days < 1 || s.Days > 62 {
		return fmt.Errorf("days %d: want 1..62", s.Days)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil {
		return fmt.Errorf("timezone %q: %w", s.Timezone, err)
	}
	for i, t := range s.Travel {
		if _, err := time.LoadLocation(t.Timezone); err != nil || t.Timezone == "" {
			return fmt.Errorf("travel[%d].timezone %q: want an IANA zone name", i, t.Timezone)
		}
		if err := checkDay(fmt.Sprintf("travel[%d]", i), t.Day, s.Days); err != nil {
			return err
		}
		if _, err := policy.ParseTimeOfDay(t.At); err != nil {
			return fmt.Errorf("travel[%d].at: %w", i, err)
		}
	}
	for i, w := range s.Owner.Attached {
		if err := w.check(fmt.Sprintf("owner.attached[%d]", i)); err != nil {
			return err
		}
	}
	if err := s.Owner.Reactions.check(); err != nil {
		return err
	}
	if s.Owner.ReactAfter != "" {
		if d, err := time.ParseDuration(s.Owner.ReactAfter); err != nil || d < 0 || d > 24*time.Hour {
			return fmt.Errorf("owner.react_after %q: want a duration 0..24h", s.Owner.ReactAfter)
		}
	}
	for i, m := range s.Owner.Messages {
		field := fmt.Sprintf("owner.messages[%d]", i)
		if strings.TrimSpace(m.Text) == "" {
			return fmt.Errorf("%s.text is required", field)
		}
		if _, err := policy.ParseTimeOfDay(m.At); err != nil {
			return fmt.Errorf("%s.at: %w", field, err)
		}
		if m.Day != nil {
			if err := checkDay(field, *m.Day, s.Days); err != nil {
				return err
			}
		}
		if _, err := parseWeekdays(m.Days); err != nil {
			return fmt.Errorf("%s.days: %w", field, err)
		}
	}
	for i, d := range s.Deadlines {
		if _, _, err := parseDue(d.Due, time.UTC); err != nil || (strings.TrimSpace(d.Text) == "" && strings.TrimSpace(d.Line) == "") {
			return fmt.Errorf("deadlines[%d]: want due YYYY-MM-DD[ HH:MM] and a text or line (got %q, %q)", i, d.Due, d.Text)
		}
	}
	for i, j := range s.Cron {
		if j.Name == "" || j.Message == "" {
			return fmt.Errorf("cron[%d]: name and message are required", i)
		}
	}
	switch s.Planner.Kind {
	case "":
		s.Planner.Kind = PlannerNudgeEveryTick
	case PlannerNudgeEveryTick, PlannerScripted, PlannerSkip, PlannerModel:
	default:
		return fmt.Errorf("planner.kind %q: want %s, %s, %s or %s", s.Planner.Kind, PlannerNudgeEveryTick, PlannerScripted, PlannerSkip, PlannerModel)
	}
	for i, d := range s.Planner.Script {
		field := fmt.Sprintf("planner.script[%d]", i)
		if err := checkDay(field, d.Day, s.Days); err != nil {
			return err
		}
		if _, err := policy.ParseTimeOfDay(d.At); err != nil {
			return fmt.Errorf("%s.at: %w", field, err)
		}
		switch d.Action {
		case "skip", "nudge", "nudge_inject", "nudge_defer":
		default:
			return fmt.Errorf("%s.action %q: want skip, nudge, nudge_inject or nudge_defer", field, d.Action)
		}
		if d.Action != "skip" && strings.TrimSpace(d.Message) == "" {
			return fmt.Errorf("%s.message is required for %s", field, d.Action)
		}
	}
	for i, o := range s.Planner.Outages {
		field := fmt.Sprintf("planner.outages[%d]", i)
		if err := checkDay(field, o.Day, s.Days); err != nil {
			return err
		}
		from, err1 := policy.ParseTimeOfDay(o.From)
		to, err2 := policy.ParseTimeOfDay(o.To)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if to <= from {
			return fmt.Errorf("%s: to must be after from", field)
		}
	}
	return nil
}

func checkDay(field string, day, days int) error {
	if day < 0 || day >= days {
		return fmt.Errorf("%s.day %d: want 0..%d", field, day, days-1)
	}
	return nil
}

func (w Window) check(field string) error {
	if _, err := policy.ParseTimeOfDay(w.From); err != nil {
		return fmt.Errorf("%s.from: %w", field, err)
	}
	if _, err := policy.ParseTimeOfDay(w.To); err != nil {
		return fmt.Errorf("%s.to: %w", field, err)
	}
	if _, err := parseWeekdays(w.Days); err != nil {
		return fmt.Errorf("%s.days: %w", field, err)
	}
	switch w.Surface {
	case "", "cli", "tui":
	default:
		return fmt.Errorf("%s.surface %q: want cli or tui", field, w.Surface)
	}
	return nil
}

func (r Reactions) check() error {
	if err := r.Default.check("owner.reactions.default"); err != nil {
		return err
	}
	for i, h := range r.Hours {
		field := fmt.Sprintf("owner.reactions.hours[%d]", i)
		if err := (Window{From: h.From, To: h.To}).check(field); err != nil {
			return err
		}
		if err := h.Odds.check(field); err != nil {
			return err
		}
	}
	for k, o := range r.Topics {
		if err := o.check("owner.reactions.topics." + k); err != nil {
			return err
		}
	}
	return nil
}

func (o Odds) check(field string) error {
	if o.Accept < 0 || o.Dismiss < 0 || o.Ignore < 0 {
		return fmt.Errorf("%s: odds must be >= 0", field)
	}
	return nil
}

var weekdayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// parseWeekdays reads ["mon", "tue", …] or the shorthands "weekdays" and "weekend".
func parseWeekdays(days []string) ([]time.Weekday, error) {
	var out []time.Weekday
	for _, d := range days {
		switch k := strings.ToLower(strings.TrimSpace(d)); k {
		case "weekdays":
			out = append(out, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday)
		case "weekend":
			out = append(out, time.Saturday, time.Sunday)
		default:
			wd, ok := weekdayNames[k[:min(3, len(k))]]
			if !ok {
				return nil, fmt.Errorf("day %q: want mon..sun, weekdays or weekend", d)
			}
			out = append(out, wd)
		}
	}
	return out, nil
}

func parseDue(s string, loc *time.Location) (time.Time, bool, error) {
	if t, err := time.ParseInLocation("2006-01-02 15:04", s, loc); err == nil {
		return t, true, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, s, loc)
	return t, false, err
}
