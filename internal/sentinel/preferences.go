package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// Preference-learner thresholds. An hour of the day, or a topic, is one the
// owner keeps dismissing when, among the Sentinel nudges dispatched in the
// last DefaultLearnWindow, at least DefaultLearnMinDismissals of its
// nudges were dismissed and dismissals are at least DefaultLearnMinDismissRate
// of its verdicts. Three is the smallest count that is a habit rather than
// a bad evening; 75% keeps an hour the owner sometimes welcomes open.
const (
	DefaultLearnWindow         = 14 * 24 * time.Hour
	DefaultLearnMinDismissals  = 3
	DefaultLearnMinDismissRate = 0.75
	// DefaultLearnTailBytes bounds how much of feedback.jsonl's end one
	// run reads: the learner never reads the whole log.
	DefaultLearnTailBytes = 1 << 20
)

// LearnedWindowName names the do-not-disturb windows the learner adds, so
// the owner can tell them from their own in `raven sentinel prefs`.
const LearnedWindowName = "learned"

// PreferenceLearnerOptions configure a learner. Path, Feedback and Policy
// are required.
type PreferenceLearnerOptions struct {
	Path     string // sentinel/preferences.json
	Feedback *feedback.Tracker
	// Policy is the configured policy: its quiet hours are what a learned
	// evening extends, and its location gives the hours.
	Policy         policy.Config
	Window         time.Duration
	MinDismissals  int
	MinDismissRate float64
	TailBytes      int64
	Clock          clock.Clock
	Logger         *slog.Logger
}

// PreferenceLearner turns repeated dismissals into preferences.json
// entries. It only ever adds (tighten-only): hours become quiet hours
// (extending the configured window when adjacent) or do-not-disturb
// windows, topics become muted topics. The owner removes them with
// `raven sentinel prefs unset`.
type PreferenceLearner struct {
	o   PreferenceLearnerOptions
	log *slog.Logger
}

// Learned is what one Learn run added to preferences.json.
type Learned struct {
	QuietHours  *policy.DayWindow  `json:"quiet_hours,omitempty"`
	DND         []policy.DayWindow `json:"dnd,omitempty"`
	MutedTopics []string           `json:"muted_topics,omitempty"`
}

// Empty reports whether nothing was learned.
func (l Learned) Empty() bool {
	return l.QuietHours == nil && len(l.DND) == 0 && len(l.MutedTopics) == 0
}

// NewPreferenceLearner returns a learner with o's zero fields defaulted.
func NewPreferenceLearner(o PreferenceLearnerOptions) (*PreferenceLearner, error) {
	if o.Path == "" || o.Feedback == nil {
		return nil, fmt.Errorf("sentinel: preference learner needs a preferences path and a feedback tracker")
	}
	if o.Policy.Location == nil {
		o.Policy.Location = time.Local
	}
	if o.Window <= 0 {
		o.Window = DefaultLearnWindow
	}
	if o.MinDismissals <= 0 {
		o.MinDismissals = DefaultLearnMinDismissals
	}
	if o.MinDismissRate <= 0 || o.MinDismissRate > 1 {
		o.MinDismissRate = DefaultLearnMinDismissRate
	}
	if o.TailBytes <= 0 {
		o.TailBytes = DefaultLearnTailBytes
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &PreferenceLearner{o: o, log: o.Logger}, nil
}

type tally struct{ verdicts, dismissed int }

func (t tally) kept(minN int, minRate float64) bool {
	return t.dismissed >= minN && float64(t.dismissed) >= minRate*float64(t.verdicts)
}

// Learn reads the window's nudges from the feedback tail and adds what the
// owner keeps dismissing to preferences.json.
//
// Only verdicts given after preferences.json last changed count: what was
// learned from is spent, and an entry the owner removed with `prefs unset`
// stays removed until the owner dismisses enough again.
func (l *PreferenceLearner) Learn(ctx context.Context) (Learned, error) {
	now := l.o.Clock.Now()
	nudges, err := l.o.Feedback.NudgesSince(now.Add(-l.o.Window), l.o.TailBytes)
	if err != nil {
		return Learned{}, fmt.Errorf("sentinel: learn preferences: %w", err)
	}
	var spent time.Time
	if st, err := os.Stat(l.o.Path); err == nil {
		spent = st.ModTime()
	}
	var hours [24]tally
	topics := map[string]*tally{}
	for _, n := range nudges {
		if n.Source == feedback.SourceCron || !feedback.IsVerdict(n.Verdict) || !n.VerdictAt.After(spent) {
			continue
		}
		dis := n.Verdict == feedback.EventDismissed
		h := &hours[n.Time.In(l.o.Policy.Location).Hour()]
		h.verdicts++
		if n.Topic != "" {
			if topics[n.Topic] == nil {
				topics[n.Topic] = &tally{}
			}
			topics[n.Topic].verdicts++
		}
		if dis {
			h.dismissed++
			if n.Topic != "" {
				topics[n.Topic].dismissed++
			}
		}
	}
	var blocked [24]bool
	anyHour := false
	for h, t := range hours {
		if t.kept(l.o.MinDismissals, l.o.MinDismissRate) {
			blocked[h], anyHour = true, true
		}
	}
	var muted []string
	for tag, t := range topics {
		if t.kept(l.o.MinDismissals, l.o.MinDismissRate) {
			muted = append(muted, tag)
		}
	}
	slices.Sort(muted)
	if !anyHour && len(muted) == 0 {
		return Learned{}, nil
	}
	var got Learned
	_, err = policy.UpdatePreferences(ctx, l.o.Path, func(ov *policy.Overrides) (bool, error) {
		got = l.apply(ov, blocked, muted)
		return !got.Empty(), nil
	})
	if err != nil {
		return Learned{}, fmt.Errorf("sentinel: learn preferences: %w", err)
	}
	if !got.Empty() {
		// The file's time marks the evidence spent, on the learner's
		// clock (a fake one in tests), so the same dismissals never teach
		// twice.
		if err := os.Chtimes(l.o.Path, now, now); err != nil {
			l.log.Warn("sentinel: preferences learned but not marked; they may be learned again", "path", l.o.Path, "err", err)
		}
		l.log.Info("sentinel: learned preferences from dismissals", "path", l.o.Path, "quiet_hours", got.QuietHours, "dnd", got.DND, "muted_topics", got.MutedTopics)
	}
	return got, nil
}

// apply adds the blocked hours and muted topics that ov and the configured
// policy do not cover yet.
func (l *PreferenceLearner) apply(ov *policy.Overrides, blocked [24]bool, muted []string) Learned {
	var got Learned
	cfg := l.o.Policy
	covered := func(h int) bool {
		ws := append([]policy.DayWindow{cfg.QuietHours}, cfg.PersonaDND...)
		if ov.QuietHours != nil {
			ws = append(ws, *ov.QuietHours)
		}
		ws = append(ws, ov.DND...)
		for _, w := range ws {
			if coversHour(w, h) {
				return true
			}
		}
		return false
	}
	for h := range blocked {
		if blocked[h] && covered(h) {
			blocked[h] = false
		}
	}
	// Hours next to the quiet window extend it: "quiet from 22:00" is what
	// an owner who dismisses every 22:00 nudge means.
	base := cfg.QuietHours
	if ov.QuietHours != nil {
		base = *ov.QuietHours
	}
	if base.Start != base.End && len(base.Days) == 0 {
		w := base
		for range 24 {
			prev := (int(w.Start) + 24*60 - 1) / 60 % 24
			if !blocked[prev] || todMod(prev*60) == w.End {
				break
			}
			blocked[prev], w.Start = false, todMod(prev*60)
		}
		for range 24 {
			next := int(w.End) / 60 % 24
			if !blocked[next] || todMod((next+1)*60) == w.Start {
				break
			}
			blocked[next], w.End = false, todMod((next+1)*60)
		}
		if w.Start != base.Start || w.End != base.End {
			w.Name = ""
			ov.QuietHours = &w
			got.QuietHours = &w
		}
	}
	for h := 0; h < 24; h++ {
		if !blocked[h] {
			continue
		}
		end := h + 1
		for end < 24 && blocked[end] {
			end++
		}
		w := policy.DayWindow{Name: LearnedWindowName, Start: todMod(h * 60), End: todMod(end * 60)}
		if ov.AddDND(w) {
			got.DND = append(got.DND, w)
		}
		h = end
	}
	for _, t := range muted {
		if ov.MuteTopic(t) {
			got.MutedTopics = append(got.MutedTopics, t)
		}
	}
	return got
}

// todMod is minutes after midnight, wrapped into one day.
func todMod(m int) policy.TimeOfDay { return policy.TimeOfDay(((m % 1440) + 1440) % 1440) }

// coversHour reports whether w (every day) contains all of hour h.
func coversHour(w policy.DayWindow, h int) bool {
	if len(w.Days) != 0 || w.Start == w.End {
		return false
	}
	in := func(m int) bool {
		s, e := int(w.Start), int(w.End)
		if s < e {
			return m >= s && m < e
		}
		return m >= s || m < e
	}
	return in(h*60) && in(h*60+59)
}
