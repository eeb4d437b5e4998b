package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/statefile"
)

// The preferences editor: reading, changing and atomically replacing
// sentinel/preferences.json, for `raven sentinel prefs` and the learner.

// Errors of the preferences editor. Each wraps with the key and value.
var (
	// ErrLoosen: the value would loosen the configured policy, and
	// preferences can only tighten it.
	ErrLoosen = errors.New("preferences can only tighten the configured policy")
	// ErrUnknownPreference: not a key of preferences.json.
	ErrUnknownPreference = errors.New("unknown preference")
	// ErrBadPreference: the value does not parse.
	ErrBadPreference = errors.New("bad preference value")
)

// PreferencesError is a preferences file that exists but cannot be used.
// Nothing was written over it: the owner's file is never silently reset.
type PreferencesError struct {
	Path string
	Err  error
}

func (e *PreferencesError) Error() string {
	return fmt.Sprintf("policy: %s is malformed (%v); fix it or remove it", e.Path, e.Err)
}

func (e *PreferencesError) Unwrap() error { return e.Err }

// ReadPreferences reads path strictly. A missing file is no overrides; a
// malformed one is a *PreferencesError.
func ReadPreferences(path string) (Overrides, error) {
	o, err := readPreferences(path)
	if errors.Is(err, os.ErrNotExist) {
		return Overrides{}, nil
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return Overrides{}, fmt.Errorf("policy: read preferences: %w", err)
		}
		return Overrides{}, &PreferencesError{Path: path, Err: err}
	}
	return o, nil
}

// preferencesLockTimeout bounds waiting for another writer (the learner in
// a gateway, `raven sentinel prefs set` in a terminal).
const preferencesLockTimeout = 10 * time.Second

// UpdatePreferences applies fn to the preferences at path under the file's
// lock (path+".lock") and, when fn reports a change, validates and replaces
// the file atomically (temp file, fsync, rename). A malformed file is
// reported and left alone.
func UpdatePreferences(ctx context.Context, path string, fn func(*Overrides) (changed bool, err error)) (Overrides, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, preferencesLockTimeout)
		defer cancel()
	}
	lock := statefile.NewLock(path + ".lock")
	if err := lock.Acquire(ctx); err != nil {
		return Overrides{}, fmt.Errorf("policy: preferences: %w", err)
	}
	defer lock.Release()
	cur, err := ReadPreferences(path)
	if err != nil {
		return Overrides{}, err
	}
	changed, err := fn(&cur)
	if err != nil || !changed {
		return cur, err
	}
	if err := cur.validate(); err != nil {
		return cur, fmt.Errorf("%w: %v", ErrBadPreference, err)
	}
	data, err := json.MarshalIndent(cur, "", "  ")
	if err != nil {
		return cur, fmt.Errorf("policy: encode preferences: %w", err)
	}
	if err := statefile.WriteAtomic(path, append(data, '\n'), 0o600); err != nil {
		return cur, fmt.Errorf("policy: write preferences: %w", err)
	}
	return cur, nil
}

// Preference keys of preferences.json, in display order.
const (
	PrefQuietHours        = "quiet_hours"
	PrefDND               = "dnd"
	PrefMutedTopics       = "muted_topics"
	PrefDayQuota          = "day_quota"
	PrefHourQuota         = "hour_quota"
	PrefSpawnDayQuota     = "spawn_day_quota"
	PrefSpawnHourQuota    = "spawn_hour_quota"
	PrefTopicHourQuota    = "topic_hour_quota"
	PrefTopicDayQuota     = "topic_day_quota"
	PrefTopicWeekQuota    = "topic_week_quota"
	PrefSessionCooldown   = "session_cooldown"
	PrefDismissalCooldown = "dismissal_cooldown"
	PrefDedupWindow       = "dedup_window"
	PrefWeekendFactor     = "weekend_factor"
)

// PreferenceKeys lists every key Set and Unset accept.
func PreferenceKeys() []string {
	return []string{PrefQuietHours, PrefDND, PrefMutedTopics, PrefDayQuota, PrefHourQuota, PrefSpawnDayQuota, PrefSpawnHourQuota,
		PrefTopicHourQuota, PrefTopicDayQuota, PrefTopicWeekQuota, PrefSessionCooldown, PrefDismissalCooldown, PrefDedupWindow, PrefWeekendFactor}
}

// quota returns the override field and configured value of a quota key.
func (o *Overrides) quota(c Config, key string) (**int, int, bool) {
	switch key {
	case PrefDayQuota:
		return &o.DayQuota, c.DayQuota, true
	case PrefHourQuota:
		return &o.HourQuota, c.HourQuota, true
	case PrefSpawnDayQuota:
		return &o.SpawnDayQuota, c.SpawnDayQuota, true
	case PrefSpawnHourQuota:
		return &o.SpawnHourQuota, c.SpawnHourQuota, true
	case PrefTopicHourQuota:
		return &o.TopicHourQuota, c.TopicHourQuota, true
	case PrefTopicDayQuota:
		return &o.TopicDayQuota, c.TopicDayQuota, true
	case PrefTopicWeekQuota:
		return &o.TopicWeekQuota, c.TopicWeekQuota, true
	}
	return nil, 0, false
}

// duration returns the override field and configured value of a duration key.
func (o *Overrides) duration(c Config, key string) (**Duration, Duration, bool) {
	switch key {
	case PrefSessionCooldown:
		return &o.SessionCooldown, c.SessionCooldown, true
	case PrefDismissalCooldown:
		return &o.DismissalCooldown, c.DismissalCooldown, true
	case PrefDedupWindow:
		return &o.DedupWindow, c.DedupWindow, true
	}
	return nil, 0, false
}

// ParseDayWindow parses "HH:MM-HH:MM" (wrapping midnight when the end is
// earlier than the start).
func ParseDayWindow(s string) (DayWindow, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return DayWindow{}, fmt.Errorf("%w: window %q: want HH:MM-HH:MM", ErrBadPreference, s)
	}
	start, err := ParseTimeOfDay(strings.TrimSpace(a))
	if err != nil {
		return DayWindow{}, fmt.Errorf("%w: %v", ErrBadPreference, err)
	}
	end, err := ParseTimeOfDay(strings.TrimSpace(b))
	if err != nil {
		return DayWindow{}, fmt.Errorf("%w: %v", ErrBadPreference, err)
	}
	if start == end {
		return DayWindow{}, fmt.Errorf("%w: window %q is empty", ErrBadPreference, s)
	}
	return DayWindow{Start: start, End: end}, nil
}

// Set sets key to value. Every value is checked against c, the configured
// policy: a quota above it, a cooldown or window below it, or a weekend
// factor above it is refused with ErrLoosen. quiet_hours replaces the
// preferred extra quiet window; dnd and muted_topics add to their lists
// (comma-separated values add several).
func (o *Overrides) Set(c Config, key, value string) error {
	value = strings.TrimSpace(value)
	if p, base, ok := o.quota(c, key); ok {
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: %s %q: want a whole number >= 0", ErrBadPreference, key, value)
		}
		if n > base {
			return fmt.Errorf("%w: %s %d is above the configured %d", ErrLoosen, key, n, base)
		}
		*p = &n
		return nil
	}
	if p, base, ok := o.duration(c, key); ok {
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("%w: %s %q: want a duration like 45m", ErrBadPreference, key, value)
		}
		if Duration(d) < base {
			return fmt.Errorf("%w: %s %s is shorter than the configured %s", ErrLoosen, key, d, time.Duration(base))
		}
		v := Duration(d)
		*p = &v
		return nil
	}
	switch key {
	case PrefQuietHours:
		w, err := ParseDayWindow(value)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		o.QuietHours = &w
		return nil
	case PrefDND:
		for part := range strings.SplitSeq(value, ",") {
			w, err := ParseDayWindow(part)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			o.AddDND(w)
		}
		return nil
	case PrefMutedTopics:
		for part := range strings.SplitSeq(value, ",") {
			t := strings.ToLower(strings.TrimSpace(part))
			if t == "" || len(t) > maxTopic {
				return fmt.Errorf("%w: %s %q: want topic tags of 1..%d bytes", ErrBadPreference, key, part, maxTopic)
			}
			o.MuteTopic(t)
		}
		return nil
	case PrefWeekendFactor:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("%w: %s %q: want a number in (0,1]", ErrBadPreference, key, value)
		}
		if f > c.WeekendFactor {
			return fmt.Errorf("%w: %s %g is above the configured %g", ErrLoosen, key, f, c.WeekendFactor)
		}
		o.WeekendFactor = &f
		return nil
	}
	return fmt.Errorf("%w %q (keys: %s)", ErrUnknownPreference, key, strings.Join(PreferenceKeys(), ", "))
}

// Unset removes key (back to the configured policy) and reports whether
// it was set.
func (o *Overrides) Unset(key string) (bool, error) {
	if p, _, ok := o.quota(Config{}, key); ok {
		was := *p != nil
		*p = nil
		return was, nil
	}
	if p, _, ok := o.duration(Config{}, key); ok {
		was := *p != nil
		*p = nil
		return was, nil
	}
	var was bool
	switch key {
	case PrefQuietHours:
		was, o.QuietHours = o.QuietHours != nil, nil
	case PrefDND:
		was, o.DND = len(o.DND) > 0, nil
	case PrefMutedTopics:
		was, o.MutedTopics = len(o.MutedTopics) > 0, nil
	case PrefWeekendFactor:
		was, o.WeekendFactor = o.WeekendFactor != nil, nil
	default:
		return false, fmt.Errorf("%w %q (keys: %s)", ErrUnknownPreference, key, strings.Join(PreferenceKeys(), ", "))
	}
	return was, nil
}

// AddDND adds w unless an equal window is listed; it reports whether it did.
func (o *Overrides) AddDND(w DayWindow) bool {
	for _, x := range o.DND {
		if x.Start == w.Start && x.End == w.End && slices.Equal(x.Days, w.Days) {
			return false
		}
	}
	o.DND = append(o.DND, w)
	return true
}

// MuteTopic adds tag unless it is muted already; it reports whether it did.
func (o *Overrides) MuteTopic(tag string) bool {
	if slices.Contains(o.MutedTopics, tag) {
		return false
	}
	o.MutedTopics = append(o.MutedTopics, tag)
	return true
}

// PreferenceRow is one key as `raven sentinel prefs` shows it.
type PreferenceRow struct {
	Key        string `json:"key"`
	Configured string `json:"configured"`
	Preference string `json:"preference,omitempty"`
	Effective  string `json:"effective"`
}

// EffectivePreferences lists every key with its configured value, the
// owner's preference and the value the policy applies (before the
// adaptive and weekend multipliers scale the hour quota).
func EffectivePreferences(c Config, o Overrides) []PreferenceRow {
	lim := tighten(&c, &o)
	windows := func(ws []DayWindow) string {
		var parts []string
		for _, w := range ws {
			part := w.String()
			if w.Name != "" {
				part += " (" + w.Name + ")"
			}
			parts = append(parts, part)
		}
		return strings.Join(parts, ", ")
	}
	join := func(a, b string) string {
		switch {
		case a == "":
			return b
		case b == "":
			return a
		}
		return a + " + " + b
	}
	var rows []PreferenceRow
	for _, key := range PreferenceKeys() {
		r := PreferenceRow{Key: key}
		if p, base, ok := o.quota(c, key); ok {
			r.Configured, r.Effective = strconv.Itoa(base), strconv.Itoa(minInt(base, *p))
			if *p != nil {
				r.Preference = strconv.Itoa(**p)
			}
		} else if p, base, ok := o.duration(c, key); ok {
			r.Configured, r.Effective = time.Duration(base).String(), maxDur(base, *p).String()
			if *p != nil {
				r.Preference = time.Duration(**p).String()
			}
		} else {
			switch key {
			case PrefQuietHours:
				r.Configured = c.QuietHours.String()
				if o.QuietHours != nil {
					r.Preference = o.QuietHours.String()
				}
				r.Effective = join(r.Configured, r.Preference)
			case PrefDND:
				r.Configured, r.Preference = windows(c.PersonaDND), windows(o.DND)
				r.Effective = join(r.Configured, r.Preference)
			case PrefMutedTopics:
				r.Preference = strings.Join(o.MutedTopics, ", ")
				r.Effective = r.Preference
			case PrefWeekendFactor:
				r.Configured, r.Effective = strconv.FormatFloat(c.WeekendFactor, 'g', -1, 64), strconv.FormatFloat(lim.weekendFactor, 'g', -1, 64)
				if o.WeekendFactor != nil {
					r.Preference = strconv.FormatFloat(*o.WeekendFactor, 'g', -1, 64)
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}
