package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// TimeOfDay is minutes after local midnight; it reads and writes as "HH:MM".
type TimeOfDay int

// ParseTimeOfDay parses "HH:MM" (00:00–23:59; "24:00" means end of day).
func ParseTimeOfDay(s string) (TimeOfDay, error) {
	var h, m int
	if _, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || len(s) < 4 || len(s) > 5 {
		return 0, fmt.Errorf("policy: time of day %q: want HH:MM", s)
	}
	if h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("policy: time of day %q out of range", s)
	}
	return TimeOfDay(h*60 + m), nil
}

func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", int(t)/60, int(t)%60) }

// MarshalText implements encoding.TextMarshaler.
func (t TimeOfDay) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *TimeOfDay) UnmarshalText(b []byte) error {
	v, err := ParseTimeOfDay(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// DayWindow is a daily window [Start, End) that wraps midnight when End <
// Start (23:00–07:00). Start == End is empty. Days limits it to some
// weekdays (of the window's start); empty means every day.
type DayWindow struct {
	Name  string         `json:"name,omitempty"`
	Start TimeOfDay      `json:"start"`
	End   TimeOfDay      `json:"end"`
	Days  []time.Weekday `json:"days,omitempty"`
}

// Contains reports whether local time t falls in the window.
func (w DayWindow) Contains(t time.Time) bool {
	if w.Start == w.End {
		return false
	}
	m := TimeOfDay(t.Hour()*60 + t.Minute())
	day := t.Weekday()
	if w.Start < w.End {
		return m >= w.Start && m < w.End && w.onDay(day)
	}
	if m >= w.Start {
		return w.onDay(day)
	}
	if m < w.End {
		return w.onDay((day + 6) % 7) // the window opened yesterday
	}
	return false
}

func (w DayWindow) onDay(d time.Weekday) bool {
	if len(w.Days) == 0 {
		return true
	}
	for _, x := range w.Days {
		if x == d {
			return true
		}
	}
	return false
}

func (w DayWindow) String() string { return w.Start.String() + "-" + w.End.String() }

// Duration is a time.Duration that reads and writes as "30m" in JSON.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "90m" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("policy: duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("policy: duration %s: want \"30m\" or seconds", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// Config holds every threshold of the policy. DefaultConfig documents the
// defaults; the config package maps its keys onto these fields.
type Config struct {
	// Location is the owner's time zone for quiet hours, day quotas and DND
	// windows. Default time.Local.
	Location *time.Location `json:"-"`

	// QuietHours mutes nudges (default 23:00–07:00). High priority bypasses
	// unless its own acceptance is low (see QuietBypass*).
	QuietHours DayWindow `json:"quiet_hours"`
	// The high-priority quiet-hours bypass is withdrawn once at least
	// QuietBypassMinSamples high-priority verdicts exist and their
	// acceptance rate is below QuietBypassMinAcceptance (default 5, 0.5).
	QuietBypassMinSamples    int     `json:"quiet_bypass_min_samples"`
	QuietBypassMinAcceptance float64 `json:"quiet_bypass_min_acceptance"`

	// LearnedDND marks an hour of the day do-not-disturb once it has at
	// least LearnedDNDMinSamples verdicts and an acceptance rate at or
	// below LearnedDNDMaxAcceptance (default on, 3, 0.25).
	LearnedDND              bool    `json:"learned_dnd"`
	LearnedDNDMinSamples    int     `json:"learned_dnd_min_samples"`
	LearnedDNDMaxAcceptance float64 `json:"learned_dnd_max_acceptance"`

	// PersonaDND are fixed do-not-disturb windows (work meetings, gym…).
	PersonaDND []DayWindow `json:"persona_dnd,omitempty"`

	// DayQuota is a hard cap on nudges per local calendar day (default 6).
	DayQuota int `json:"day_quota"`
	// HourQuota is the base per-rolling-hour quota (default 2), scaled by
	// the adaptive multiplier and the weekend factor; never below 1.
	HourQuota int `json:"hour_quota"`
	// Spawn has its own quota line (defaults 3/day, 1/hour).
	SpawnDayQuota  int `json:"spawn_day_quota"`
	SpawnHourQuota int `json:"spawn_hour_quota"`

	// SessionCooldown spaces nudges to one session (default 20m).
	SessionCooldown Duration `json:"session_cooldown"`
	// DismissalCooldown silences nudges after any dismissal (default 2h).
	DismissalCooldown Duration `json:"dismissal_cooldown"`

	// A topic is hard-rejected for TopicRejectCooldown × min(score,
	// TopicRejectMaxFactor) after its last rejection, once the weighted
	// score of rejections within TopicRejectWindow reaches
	// TopicRejectThreshold. Weights per verdict: dismissed 1.0, neutral 0.25.
	TopicRejectCooldown    Duration `json:"topic_reject_cooldown"`
	TopicRejectWindow      Duration `json:"topic_reject_window"`
	TopicRejectThreshold   float64  `json:"topic_reject_threshold"`
	TopicRejectMaxFactor   float64  `json:"topic_reject_max_factor"`
	TopicRejectWeightDism  float64  `json:"topic_reject_weight_dismissed"`
	TopicRejectWeightNeutr float64  `json:"topic_reject_weight_neutral"`

	// A topic with at least TopicGateMinSamples verdicts and an acceptance
	// rate below TopicGateMinRate is denied (default 4, 0.25).
	TopicGateMinSamples int     `json:"topic_gate_min_samples"`
	TopicGateMinRate    float64 `json:"topic_gate_min_rate"`

	// DedupWindow denies the same content (and any topic a cron job fired)
	// within the window (default 6h).
	DedupWindow Duration `json:"dedup_window"`

	// Rolling per-topic quotas (default 1/hour, 2/day, 5/week).
	TopicHourQuota int `json:"topic_hour_quota"`
	TopicDayQuota  int `json:"topic_day_quota"`
	TopicWeekQuota int `json:"topic_week_quota"`

	// Adaptive hour-quota multiplier.
	Adaptive AdaptiveConfig `json:"adaptive"`

	// WeekendFactor (0,1] scales the hour quota on Saturday and Sunday
	// (default 0.5).
	WeekendFactor float64 `json:"weekend_factor"`

	// LedgerCap bounds the persisted fire ledger (default 10000); fires
	// older than a week are dropped earlier.
	LedgerCap int `json:"ledger_cap"`
	// OutcomeCap bounds the persisted verdict history (default 2000).
	OutcomeCap int `json:"outcome_cap"`
}

// AdaptiveConfig tunes the hour-quota multiplier from the acceptance rate.
type AdaptiveConfig struct {
	// TargetRate is the acceptance rate at which the multiplier is 1.
	TargetRate float64 `json:"target_rate"` // default 0.5
	// Gain: target multiplier = 1 + Gain × (rate − TargetRate) (default 1).
	Gain float64 `json:"gain"`
	// Min/MaxMultiplier clamp the multiplier (default 0.5, 1.5).
	MinMultiplier float64 `json:"min_multiplier"`
	MaxMultiplier float64 `json:"max_multiplier"`
	// Below ColdStartSamples the multiplier never drops under
	// ColdStartFloor, so a few early dismissals cannot starve a new owner
	// (default 20, 0.75).
	ColdStartSamples int     `json:"cold_start_samples"`
	ColdStartFloor   float64 `json:"cold_start_floor"`
	// Tightening needs MinSamplesToTighten verdicts, loosening needs more
	// (default 5, 15).
	MinSamplesToTighten int `json:"min_samples_to_tighten"`
	MinSamplesToLoosen  int `json:"min_samples_to_loosen"`
	// HysteresisBand: the multiplier moves only when the target differs by
	// at least this much (default 0.1).
	HysteresisBand float64 `json:"hysteresis_band"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Location:                 time.Local,
		QuietHours:               DayWindow{Start: 23 * 60, End: 7 * 60},
		QuietBypassMinSamples:    5,
		QuietBypassMinAcceptance: 0.5,
		LearnedDND:               true,
		LearnedDNDMinSamples:     3,
		LearnedDNDMaxAcceptance:  0.25,
		DayQuota:                 6,
		HourQuota:                2,
		SpawnDayQuota:            3,
		SpawnHourQuota:           1,
		SessionCooldown:          Duration(20 * time.Minute),
		DismissalCooldown:        Duration(2 * time.Hour),
		TopicRejectCooldown:      Duration(24 * time.Hour),
		TopicRejectWindow:        Duration(7 * 24 * time.Hour),
		TopicRejectThreshold:     1.0,
		TopicRejectMaxFactor:     4,
		TopicRejectWeightDism:    1.0,
		TopicRejectWeightNeutr:   0.25,
		TopicGateMinSamples:      4,
		TopicGateMinRate:         0.25,
		DedupWindow:              Duration(6 * time.Hour),
		TopicHourQuota:           1,
		TopicDayQuota:            2,
		TopicWeekQuota:           5,
		Adaptive: AdaptiveConfig{
			TargetRate:          0.5,
			Gain:                1,
			MinMultiplier:       0.5,
			MaxMultiplier:       1.5,
			ColdStartSamples:    20,
			ColdStartFloor:      0.75,
			MinSamplesToTighten: 5,
			MinSamplesToLoosen:  15,
			HysteresisBand:      0.1,
		},
		WeekendFactor: 0.5,
		LedgerCap:     10000,
		OutcomeCap:    2000,
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	for name, v := range map[string]int{
		"day_quota": c.DayQuota, "hour_quota": c.HourQuota, "spawn_day_quota": c.SpawnDayQuota,
		"spawn_hour_quota": c.SpawnHourQuota, "topic_hour_quota": c.TopicHourQuota,
		"topic_day_quota": c.TopicDayQuota, "topic_week_quota": c.TopicWeekQuota,
		"quiet_bypass_min_samples": c.QuietBypassMinSamples, "learned_dnd_min_samples": c.LearnedDNDMinSamples,
		"topic_gate_min_samples": c.TopicGateMinSamples,
	} {
		if v < 0 {
			bad("%s must be >= 0 (got %d)", name, v)
		}
	}
	for name, v := range map[string]Duration{
		"session_cooldown": c.SessionCooldown, "dismissal_cooldown": c.DismissalCooldown,
		"topic_reject_cooldown": c.TopicRejectCooldown, "topic_reject_window": c.TopicRejectWindow,
		"dedup_window": c.DedupWindow,
	} {
		if v < 0 {
			bad("%s must be >= 0", name)
		}
	}
	for name, v := range map[string]float64{
		"quiet_bypass_min_acceptance": c.QuietBypassMinAcceptance, "learned_dnd_max_acceptance": c.LearnedDNDMaxAcceptance,
		"topic_gate_min_rate": c.TopicGateMinRate, "adaptive.target_rate": c.Adaptive.TargetRate,
	} {
		if v < 0 || v > 1 {
			bad("%s must be in [0,1] (got %g)", name, v)
		}
	}
	if c.WeekendFactor <= 0 || c.WeekendFactor > 1 {
		bad("weekend_factor must be in (0,1] (got %g)", c.WeekendFactor)
	}
	a := c.Adaptive
	if a.MinMultiplier <= 0 || a.MinMultiplier > 1 || a.MaxMultiplier < 1 {
		bad("adaptive multipliers need 0 < min <= 1 <= max (got %g, %g)", a.MinMultiplier, a.MaxMultiplier)
	}
	if a.ColdStartFloor < a.MinMultiplier || a.ColdStartFloor > 1 {
		bad("adaptive.cold_start_floor must be in [min_multiplier,1] (got %g)", a.ColdStartFloor)
	}
	if a.MinSamplesToLoosen < a.MinSamplesToTighten {
		bad("adaptive.min_samples_to_loosen (%d) must be >= min_samples_to_tighten (%d)", a.MinSamplesToLoosen, a.MinSamplesToTighten)
	}
	if a.HysteresisBand < 0 || a.Gain < 0 {
		bad("adaptive.hysteresis_band and gain must be >= 0")
	}
	if c.TopicRejectThreshold <= 0 || c.TopicRejectMaxFactor < 1 {
		bad("topic_reject_threshold must be > 0 and topic_reject_max_factor >= 1")
	}
	if c.LedgerCap < 1 || c.OutcomeCap < 1 {
		bad("ledger_cap and outcome_cap must be >= 1")
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return errors.New("policy: invalid config: " + strings.Join(errs, "; "))
}
