package policy

import (
	"context"
	"sort"
	"time"
)

// Snapshot is the policy state shown to the planner and `raven sentinel
// status`.
type Snapshot struct {
	Now                    time.Time `json:"now"`
	InQuietHours           bool      `json:"in_quiet_hours"`
	QuietHours             string    `json:"quiet_hours"`
	InDND                  bool      `json:"in_dnd"`
	DayQuota               int       `json:"day_quota"`
	DayUsed                int       `json:"day_used"`
	DayLeft                int       `json:"day_left"`
	HourQuota              int       `json:"hour_quota"` // effective, after multipliers
	HourUsed               int       `json:"hour_used"`
	HourLeft               int       `json:"hour_left"`
	SpawnDayLeft           int       `json:"spawn_day_left"`
	SpawnHourLeft          int       `json:"spawn_hour_left"`
	Multiplier             float64   `json:"multiplier"`
	Weekend                bool      `json:"weekend"`
	WeekendFactor          float64   `json:"weekend_factor"` // applied now; 1 on weekdays
	DismissalCooldownUntil time.Time `json:"dismissal_cooldown_until,omitzero"`
	LearnedDNDHours        []int     `json:"learned_dnd_hours,omitempty"`
	HighPriorityBypass     bool      `json:"high_priority_bypass"`
	// StateError is set when the shared state could not be read; the other
	// fields then reflect the last known in-memory state.
	StateError string `json:"state_error,omitempty"`
}

// SnapshotState hydrates from the shared state and summarises it.
func (p *Policy) SnapshotState() Snapshot {
	ov, hasOv := p.overrides()
	var ovp *Overrides
	if hasOv {
		ovp = &ov
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var s Snapshot
	if err := p.hydrateLocked(context.Background()); err != nil {
		s.StateError = err.Error()
	}
	c := &p.cfg
	l := p.led
	lim := tighten(c, ovp)
	now := p.clk.Now()
	local := now.In(c.Location)
	ns := now.UnixNano()
	s.Now = now
	s.QuietHours = p.quietLabel(ovp)
	s.InQuietHours = c.QuietHours.Contains(local) || (ovp != nil && ovp.QuietHours != nil && ovp.QuietHours.Contains(local))
	_, persona := inWindows(c.PersonaDND, ovp, local)
	s.InDND = persona || p.learnedDNDLocked(local.Hour())
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, c.Location).UnixNano()
	hourAgo := ns - int64(time.Hour) + 1
	s.DayQuota = lim.dayQuota
	s.DayUsed = countSince(l.nudgeTimes, midnight)
	s.DayLeft = max(0, s.DayQuota-s.DayUsed)
	s.HourQuota = p.hourQuotaLocked(lim, ovp, local, ActionNudge)
	s.HourUsed = countSince(l.nudgeTimes, hourAgo)
	s.HourLeft = max(0, min(s.HourQuota-s.HourUsed, s.DayLeft))
	s.SpawnDayLeft = max(0, lim.spawnDayQuota-countSince(l.spawnTimes, midnight))
	s.SpawnHourLeft = max(0, min(lim.spawnHourQuota-countSince(l.spawnTimes, hourAgo), s.SpawnDayLeft))
	s.Multiplier = l.multiplier
	s.Weekend = isWeekend(local)
	s.WeekendFactor = 1
	if s.Weekend {
		s.WeekendFactor = lim.weekendFactor
	}
	if l.lastDismissal > 0 && ns-l.lastDismissal < int64(lim.dismissalCooldown) {
		s.DismissalCooldownUntil = time.Unix(0, l.lastDismissal+int64(lim.dismissalCooldown)).In(c.Location)
	}
	for h := 0; h < 24; h++ {
		if p.learnedDNDLocked(h) {
			s.LearnedDNDHours = append(s.LearnedDNDHours, h)
		}
	}
	s.HighPriorityBypass = p.highBypassLocked()
	return s
}

// TopicHistory is what the planner sees about one topic.
type TopicHistory struct {
	Topic         string    `json:"topic"`
	FiresLastWeek int       `json:"fires_last_week"`
	CronFires     int       `json:"cron_fires,omitempty"`
	LastFired     time.Time `json:"last_fired,omitzero"`
	Accepted      int       `json:"accepted"`
	Dismissed     int       `json:"dismissed"`
	LastDismissed time.Time `json:"last_dismissed,omitzero"`
}

// FireHistory returns per-topic recent fires and verdicts from the
// in-memory ledger (no disk access).
func (p *Policy) FireHistory() map[string]TopicHistory {
	p.mu.Lock()
	defer p.mu.Unlock()
	ns := p.clk.Now().UnixNano()
	out := make(map[string]TopicHistory, len(p.led.topics))
	for _, ts := range p.led.topics {
		h := TopicHistory{
			Topic:         ts.tag,
			FiresLastWeek: countSince(ts.fires, ns-int64(week)+1),
			CronFires:     ts.cronFires,
			Accepted:      ts.verdicts.acc,
			Dismissed:     ts.verdicts.dis,
		}
		if ts.lastFire > 0 {
			h.LastFired = time.Unix(0, ts.lastFire).In(p.cfg.Location)
		}
		if ts.lastDismissed > 0 {
			h.LastDismissed = time.Unix(0, ts.lastDismissed).In(p.cfg.Location)
		}
		if h.FiresLastWeek == 0 && h.Accepted == 0 && h.Dismissed == 0 {
			continue
		}
		out[ts.tag] = h
	}
	return out
}

// TopicsByRecency lists FireHistory topics, most recently fired first; a
// convenience for rendering prompts deterministically.
func TopicsByRecency(h map[string]TopicHistory) []TopicHistory {
	out := make([]TopicHistory, 0, len(h))
	for _, v := range h {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastFired.Equal(out[j].LastFired) {
			return out[i].LastFired.After(out[j].LastFired)
		}
		return out[i].Topic < out[j].Topic
	})
	return out
}
