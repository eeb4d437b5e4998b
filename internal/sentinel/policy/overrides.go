package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/strictjson"
)

// Overrides are the owner's preferences on top of Config. They can only
// tighten: quiet hours and DND windows are added to the configured ones,
// quotas are capped (min), cooldowns and windows are extended (max). A
// field that would loosen has no effect.
type Overrides struct {
	QuietHours        *DayWindow  `json:"quiet_hours,omitempty"`
	DND               []DayWindow `json:"dnd,omitempty"`
	DayQuota          *int        `json:"day_quota,omitempty"`
	HourQuota         *int        `json:"hour_quota,omitempty"`
	SpawnDayQuota     *int        `json:"spawn_day_quota,omitempty"`
	SpawnHourQuota    *int        `json:"spawn_hour_quota,omitempty"`
	TopicHourQuota    *int        `json:"topic_hour_quota,omitempty"`
	TopicDayQuota     *int        `json:"topic_day_quota,omitempty"`
	TopicWeekQuota    *int        `json:"topic_week_quota,omitempty"`
	SessionCooldown   *Duration   `json:"session_cooldown,omitempty"`
	DismissalCooldown *Duration   `json:"dismissal_cooldown,omitempty"`
	DedupWindow       *Duration   `json:"dedup_window,omitempty"`
	WeekendFactor     *float64    `json:"weekend_factor,omitempty"`
	// MutedTopics are topic tags (as DeriveTopic makes them, or a
	// decision's explicit topic) the owner does not want nudges about.
	MutedTopics []string `json:"muted_topics,omitempty"`
}

// LayerPreferences denies a request on a topic muted in preferences.json.
const LayerPreferences = "preferences"

func (o *Overrides) validate() error {
	for _, q := range []*int{o.DayQuota, o.HourQuota, o.SpawnDayQuota, o.SpawnHourQuota, o.TopicHourQuota, o.TopicDayQuota, o.TopicWeekQuota} {
		if q != nil && *q < 0 {
			return errors.New("quotas must be >= 0")
		}
	}
	for _, d := range []*Duration{o.SessionCooldown, o.DismissalCooldown, o.DedupWindow} {
		if d != nil && *d < 0 {
			return errors.New("durations must be >= 0")
		}
	}
	if o.WeekendFactor != nil && (*o.WeekendFactor <= 0 || *o.WeekendFactor > 1) {
		return errors.New("weekend_factor must be in (0,1]")
	}
	for _, t := range o.MutedTopics {
		if t == "" || len(t) > maxTopic {
			return fmt.Errorf("muted_topics: %q must be 1..%d bytes", t, maxTopic)
		}
	}
	return nil
}

// mutedTopic denies req when its topic (explicit, or derived from its
// content the way the ledger tags it) is muted. It allocates nothing.
func mutedTopic(ov *Overrides, req Request) (Verdict, bool) {
	if ov == nil || len(ov.MutedTopics) == 0 {
		return Verdict{}, false
	}
	var buf [maxTopic + 8]byte
	tag := req.Topic
	var derived []byte
	if tag == "" {
		derived = appendTopic(buf[:0], req.Content)
	}
	for _, m := range ov.MutedTopics {
		if (tag != "" && m == tag) || (tag == "" && m == string(derived)) {
			return Verdict{Layer: LayerPreferences, Reason: "topic " + m + " is muted in preferences"}, true
		}
	}
	return Verdict{}, false
}

// limits are the effective numbers for one Check: Config tightened by
// Overrides. Computing them allocates nothing.
type limits struct {
	dayQuota, hourQuota            int
	spawnDayQuota, spawnHourQuota  int
	topicHour, topicDay, topicWeek int
	sessionCooldown                time.Duration
	dismissalCooldown              time.Duration
	dedupWindow                    time.Duration
	weekendFactor                  float64
}

func minInt(base int, o *int) int {
	if o != nil && *o < base {
		return *o
	}
	return base
}

func maxDur(base Duration, o *Duration) time.Duration {
	if o != nil && *o > base {
		return time.Duration(*o)
	}
	return time.Duration(base)
}

func tighten(c *Config, o *Overrides) limits {
	l := limits{
		dayQuota: c.DayQuota, hourQuota: c.HourQuota,
		spawnDayQuota: c.SpawnDayQuota, spawnHourQuota: c.SpawnHourQuota,
		topicHour: c.TopicHourQuota, topicDay: c.TopicDayQuota, topicWeek: c.TopicWeekQuota,
		sessionCooldown:   time.Duration(c.SessionCooldown),
		dismissalCooldown: time.Duration(c.DismissalCooldown),
		dedupWindow:       time.Duration(c.DedupWindow),
		weekendFactor:     c.WeekendFactor,
	}
	if o == nil {
		return l
	}
	l.dayQuota = minInt(l.dayQuota, o.DayQuota)
	l.hourQuota = minInt(l.hourQuota, o.HourQuota)
	l.spawnDayQuota = minInt(l.spawnDayQuota, o.SpawnDayQuota)
	l.spawnHourQuota = minInt(l.spawnHourQuota, o.SpawnHourQuota)
	l.topicHour = minInt(l.topicHour, o.TopicHourQuota)
	l.topicDay = minInt(l.topicDay, o.TopicDayQuota)
	l.topicWeek = minInt(l.topicWeek, o.TopicWeekQuota)
	l.sessionCooldown = maxDur(c.SessionCooldown, o.SessionCooldown)
	l.dismissalCooldown = maxDur(c.DismissalCooldown, o.DismissalCooldown)
	l.dedupWindow = maxDur(c.DedupWindow, o.DedupWindow)
	if o.WeekendFactor != nil && *o.WeekendFactor < l.weekendFactor {
		l.weekendFactor = *o.WeekendFactor
	}
	return l
}

// PreferencesReader serves Overrides from sentinel/preferences.json,
// re-reading it only when its size or mtime changes. A missing file means no
// overrides; a malformed one is logged once and ignored (defaults kept).
type PreferencesReader struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	size    int64
	modTime time.Time
	seen    bool
	cur     Overrides
}

// NewPreferencesReader returns a reader for path.
func NewPreferencesReader(path string, logger *slog.Logger) *PreferencesReader {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PreferencesReader{path: path, log: logger}
}

// Overrides returns the current preferences; pass it as Options.Overrides.
func (r *PreferencesReader) Overrides() Overrides {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := os.Stat(r.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("policy: cannot stat preferences; using defaults", "path", r.path, "err", err)
		}
		r.seen, r.cur = false, Overrides{}
		return r.cur
	}
	if r.seen && st.Size() == r.size && st.ModTime().Equal(r.modTime) {
		return r.cur
	}
	r.seen, r.size, r.modTime = true, st.Size(), st.ModTime()
	o, err := readPreferences(r.path)
	if err != nil {
		r.log.Warn("policy: malformed preferences ignored; defaults kept", "path", r.path, "err", err)
		r.cur = Overrides{}
		return r.cur
	}
	r.cur = o
	return r.cur
}

func readPreferences(path string) (Overrides, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Overrides{}, err
	}
	var o Overrides
	if err := strictjson.Decode(data, &o); err != nil {
		return Overrides{}, fmt.Errorf("decode: %w", err)
	}
	if err := o.validate(); err != nil {
		return Overrides{}, err
	}
	return o, nil
}
