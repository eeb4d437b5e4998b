package sentinel

import (
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/calendar"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/sentinel/when"
)

// Config is the "sentinel" section of config.json: the proactive
// Sentinel. Off by default.
type Config struct {
	// Enabled turns the tick loop on (default false: opt-in).
	Enabled bool `json:"enabled"`
	// Interval between ticks (default 30m).
	Interval configtype.Duration `json:"interval"`
	// PlannerModel overrides the global model for the planner only
	// ("provider/model"); empty uses the global model.
	PlannerModel string `json:"planner_model,omitempty"`
	// DedupTTL bounds the unchanged-context skip cache (default 2h), so a
	// quiet context cannot lock skip forever.
	DedupTTL configtype.Duration `json:"dedup_ttl"`
	// DeadlineFallback lets a planner outage fire due high-priority
	// deadline slots through the policy (default true).
	DeadlineFallback bool `json:"deadline_fallback"`

	// MemoryMaxBytes of MEMORY.md read per tick (default 32768).
	MemoryMaxBytes int `json:"memory_max_bytes"`
	// HistoryTailBytes of HISTORY.md's end read per tick (default 16384).
	HistoryTailBytes int `json:"history_tail_bytes"`
	// ActiveWindow: sessions active within it are shown (default 2h).
	ActiveWindow configtype.Duration `json:"active_window"`
	// AttentionSections are the attention.md H2 sections the planner sees
	// (default: the built-in producers' sections, "Deadlines" and "Open
	// loops"; add your own hand-written sections here).
	AttentionSections []string `json:"attention_sections"`
	// Attention refreshes the attention.md producers each tick (default
	// true; pure algorithms, no model calls). DeadlineHorizon is how far
	// ahead dated lines are listed (default 336h); OpenLoopWindow how long an
	// unanswered question stays listed (default 72h).
	Attention       bool                `json:"attention"`
	DeadlineHorizon configtype.Duration `json:"deadline_horizon"`
	OpenLoopWindow  configtype.Duration `json:"open_loop_window"`
	// DateOrder reads all-numeric dates like 12/11 in deadlines: "dmy",
	// "mdy", or "auto" (default: from the locale, LC_ALL/LC_TIME/LANG;
	// en_US is month first). 15/12 is unambiguous either way.
	DateOrder string `json:"date_order"`
	// Calendar feeds the planner context's calendar from local iCalendar
	// files (off until calendar.path is set).
	Calendar calendar.Config `json:"calendar"`
	// BehaviorsLines folded events from behaviors.md (default 20), read
	// from at most BehaviorsTailBytes (default 16384).
	BehaviorsLines     int `json:"behaviors_lines"`
	BehaviorsTailBytes int `json:"behaviors_tail_bytes"`
	// Behaviors is the idle-triggered LLM extractor that appends events to
	// behaviors.md (default off).
	Behaviors BehaviorsConfig `json:"behaviors"`
	// Analysis is the daily analysis service: one model call a day whose
	// result the Commitments and On their mind sections share (default off).
	Analysis AnalysisConfig `json:"analysis"`
	// Routines is the learner of recurring patterns in HISTORY.md shown to
	// the planner (default on; pure algorithm, no model calls).
	Routines RoutinesConfig `json:"routines"`
	// Plan is the daily-plan producer: the day's intended fires from the
	// learned routines and today's deadlines, written to attention.md's
	// "Today's plan" and fed to the scheduled-fire fast path.
	Plan PlanConfig `json:"plan"`

	// InjectTTL drops injects no reply carried in time (default 6h);
	// InjectCap bounds each session's inject queue (default 3, FIFO).
	InjectTTL configtype.Duration `json:"inject_ttl"`
	InjectCap int                 `json:"inject_cap"`

	// DeferIdle: a session idle this long has settled (default 10m);
	// DeferMaxWait: a deferred nudge expires after it (default 4h);
	// DeferPoll: how often deferred nudges are checked (default 1m).
	DeferIdle    configtype.Duration `json:"defer_idle"`
	DeferMaxWait configtype.Duration `json:"defer_max_wait"`
	DeferPoll    configtype.Duration `json:"defer_poll"`

	// FeedbackWindow of the acceptance rate that retunes the policy (default 168h).
	FeedbackWindow configtype.Duration `json:"feedback_window"`
	// TriggerPoll: how often the gateway drains operator triggers
	// (triggers.json: heartbeat wakes, sentinel ticks, discovery), default 2s.
	TriggerPoll configtype.Duration `json:"trigger_poll"`

	// Discovery: the daily task-discovery menu. It shares the Sentinel's
	// lifecycle (runs whenever sentinel.enabled does); false only turns the
	// daily run off. From 09:00 local, at most 4 options. PendingTTL keeps a menu answerable
	// (default 12h); picks scoring under DecisionConfidence with the LLM
	// classifier are ignored (default 0.7); DecisionConfirm asks before
	// executing a pick (default false).
	Discovery          bool                `json:"discovery"`
	DiscoveryHour      int                 `json:"discovery_hour"`
	DiscoveryOptions   int                 `json:"discovery_options"`
	PendingTTL         configtype.Duration `json:"pending_ttl"`
	DecisionConfidence float64             `json:"decision_confidence"`
	DecisionConfirm    bool                `json:"decision_confirm"`

	// Policy holds every NudgePolicy threshold (see policy.Config).
	Policy policy.Config `json:"policy"`
}

// BehaviorsConfig configures the behaviors extractor.
type BehaviorsConfig struct {
	// Enabled turns the extractor on (default false: it sends the owner's
	// messages to the model).
	Enabled bool `json:"enabled"`
	// Idle: the owner must have been quiet this long (default 30m).
	Idle configtype.Duration `json:"idle"`
	// Interval: at most one extraction per interval across processes
	// (default 6h).
	Interval configtype.Duration `json:"interval"`
	// MaxMessages read per extraction (default 200).
	MaxMessages int `json:"max_messages"`
}

// PlanConfig configures the daily-plan producer.
type PlanConfig struct {
	// Enabled lays out the day's plan (default true; pure algorithm, no
	// model calls). Recurring routine slots fire without the planner;
	// deadline slots go to the planner.
	Enabled bool `json:"enabled"`
}

// RoutinesConfig configures the routine learner.
type RoutinesConfig struct {
	// Enabled feeds learned routines to the planner (default true).
	Enabled bool `json:"enabled"`
	// TailBytes of HISTORY.md's end the learner reads (default 262144):
	// weekly patterns need weeks of history, more than the planner's tail.
	TailBytes int `json:"tail_bytes"`
	// MinWeeks a weekly pattern needs (default 3); MinDays a daily one
	// (default 5); Max routines shown (default 5).
	MinWeeks int `json:"min_weeks"`
	MinDays  int `json:"min_days"`
	Max      int `json:"max"`
}

// DefaultConfig returns the documented defaults (the Sentinel off).
func DefaultConfig() Config {
	return Config{
		Enabled:            false,
		Interval:           configtype.Duration(1800 * time.Second),
		DedupTTL:           configtype.Duration(2 * time.Hour),
		DeadlineFallback:   true,
		MemoryMaxBytes:     32 << 10,
		HistoryTailBytes:   16 << 10,
		ActiveWindow:       configtype.Duration(2 * time.Hour),
		AttentionSections:  attention.DefaultSections(),
		Attention:          true,
		DeadlineHorizon:    configtype.Duration(14 * 24 * time.Hour),
		OpenLoopWindow:     configtype.Duration(72 * time.Hour),
		DateOrder:          when.OrderAuto,
		Calendar:           calendar.DefaultConfig(),
		BehaviorsLines:     20,
		BehaviorsTailBytes: 16 << 10,
		Behaviors:          BehaviorsConfig{Idle: configtype.Duration(30 * time.Minute), Interval: configtype.Duration(6 * time.Hour), MaxMessages: 200},
		Routines:           RoutinesConfig{Enabled: true, TailBytes: 256 << 10, MinWeeks: 3, MinDays: 5, Max: 5},
		Plan:               PlanConfig{Enabled: true},
		Analysis:           AnalysisConfig{Hour: 6},
		InjectTTL:          configtype.Duration(6 * time.Hour),
		InjectCap:          3,
		DeferIdle:          configtype.Duration(10 * time.Minute),
		DeferMaxWait:       configtype.Duration(4 * time.Hour),
		DeferPoll:          configtype.Duration(time.Minute),
		FeedbackWindow:     configtype.Duration(7 * 24 * time.Hour),
		TriggerPoll:        configtype.Duration(2 * time.Second),
		Discovery:          true,
		DiscoveryHour:      9,
		DiscoveryOptions:   4,
		PendingTTL:         configtype.Duration(12 * time.Hour),
		DecisionConfidence: 0.7,
		Policy:             policy.DefaultConfig(),
	}
}

// Validate returns the first invalid setting as a *configtype.FieldError
// whose Field is the dotted key inside the section. A policy.Validate
// failure is reported on Field "policy"; config names its full key.
func (s Config) Validate() error {
	checks := []struct {
		key string
		ok  bool
		msg string
	}{
		{"interval", s.Interval >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"dedup_ttl", s.DedupTTL >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"memory_max_bytes", s.MemoryMaxBytes >= 0 && s.MemoryMaxBytes <= 1<<20, "must be 0..1048576"},
		{"history_tail_bytes", s.HistoryTailBytes >= 0 && s.HistoryTailBytes <= 1<<20, "must be 0..1048576"},
		{"active_window", s.ActiveWindow > 0, "must be positive"},
		{"deadline_horizon", s.DeadlineHorizon >= configtype.Duration(time.Hour), "must be at least 1h"},
		{"open_loop_window", s.OpenLoopWindow >= configtype.Duration(time.Hour), "must be at least 1h"},
		{"date_order", s.DateOrder == when.OrderAuto || s.DateOrder == when.OrderDMY || s.DateOrder == when.OrderMDY, `must be "auto", "dmy" or "mdy"`},
		{"behaviors_lines", s.BehaviorsLines >= 0 && s.BehaviorsLines <= 500, "must be 0..500"},
		{"behaviors_tail_bytes", s.BehaviorsTailBytes >= 0 && s.BehaviorsTailBytes <= 1<<20, "must be 0..1048576"},
		{"behaviors.idle", s.Behaviors.Idle >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"behaviors.interval", s.Behaviors.Interval >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"behaviors.max_messages", s.Behaviors.MaxMessages >= 1 && s.Behaviors.MaxMessages <= 2000, "must be 1..2000"},
		{"routines.tail_bytes", s.Routines.TailBytes >= 0 && s.Routines.TailBytes <= 4<<20, "must be 0..4194304"},
		{"routines.min_weeks", s.Routines.MinWeeks >= 2 && s.Routines.MinWeeks <= 52, "must be 2..52"},
		{"routines.min_days", s.Routines.MinDays >= 2 && s.Routines.MinDays <= 366, "must be 2..366"},
		{"analysis.hour", s.Analysis.Hour >= 0 && s.Analysis.Hour <= 23, "must be 0..23"},
		{"routines.max", s.Routines.Max >= 1 && s.Routines.Max <= 20, "must be 1..20"},
		{"inject_ttl", s.InjectTTL >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"inject_cap", s.InjectCap >= 1 && s.InjectCap <= 100, "must be 1..100"},
		{"defer_idle", s.DeferIdle >= configtype.Duration(time.Second), "must be at least 1s"},
		{"defer_max_wait", s.DeferMaxWait > s.DeferIdle, "must be longer than sentinel.defer_idle"},
		{"defer_poll", s.DeferPoll >= configtype.Duration(time.Second), "must be at least 1s"},
		{"feedback_window", s.FeedbackWindow >= configtype.Duration(time.Hour), "must be at least 1h"},
		{"trigger_poll", s.TriggerPoll >= configtype.Duration(time.Second), "must be at least 1s"},
		{"discovery_hour", s.DiscoveryHour >= 0 && s.DiscoveryHour <= 23, "must be 0..23"},
		{"discovery_options", s.DiscoveryOptions >= 1 && s.DiscoveryOptions <= 9, "must be 1..9"},
		{"pending_ttl", s.PendingTTL >= configtype.Duration(time.Minute), "must be at least 1m"},
		{"decision_confidence", s.DecisionConfidence > 0 && s.DecisionConfidence <= 1, "must be in (0,1]"},
	}
	for _, c := range checks {
		if !c.ok {
			return configtype.Invalid(c.key, "%s", c.msg)
		}
	}
	if err := s.Calendar.Validate(); err != nil {
		return err
	}
	if err := windowDays("policy.quiet_hours.days", s.Policy.QuietHours); err != nil {
		return err
	}
	for i, w := range s.Policy.PersonaDND {
		if err := windowDays(fmt.Sprintf("policy.persona_dnd[%d].days", i), w); err != nil {
			return err
		}
	}
	if err := s.Policy.Validate(); err != nil {
		return configtype.Invalid("policy", "%s", err.Error())
	}
	return nil
}

func windowDays(field string, w policy.DayWindow) error {
	for _, d := range w.Days {
		if d < time.Sunday || d > time.Saturday {
			return configtype.Invalid(field, "day %d: want 0 (Sunday) .. 6 (Saturday)", d)
		}
	}
	return nil
}
