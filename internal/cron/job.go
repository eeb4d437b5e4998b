package cron

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Bad-input errors for job specs, beside the schedule errors.
var (
	ErrUnknownChannel = errors.New("unknown channel")
	ErrInvalidJob     = errors.New("invalid job")
	ErrNotFound       = errors.New("no such job")
)

// Limits on owner-supplied text, so a runaway tool call cannot bloat jobs.json.
const (
	MaxNameLen    = 200
	MaxMessageLen = 8000
)

// Job is one scheduled job as stored in jobs.json.
type Job struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Message  string   `json:"message"`
	Schedule Schedule `json:"schedule"`
	// Deliver sends the fire's output to the owner; without it (or with
	// Silent) the job runs and its reply is dropped.
	Deliver bool `json:"deliver"`
	// Channel and To name the single delivery target. An empty channel means
	// "cli", which like "tui" expands at fire time to the attached surface
	// and the configured forward channels. An empty To on a real channel
	// uses the chat of that channel's most recent session.
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	Broadcast bool   `json:"broadcast,omitempty"`
	Silent    bool   `json:"silent,omitempty"`
	Enabled   bool   `json:"enabled"`

	CreatedAt time.Time `json:"created_at"`
	// NextRunAt is the next scheduled fire; zero when the job never fires
	// again (a spent one-shot).
	NextRunAt time.Time `json:"next_run_at,omitzero"`
	// RunRequestedAt is set by "cron run": fire once now, whatever the
	// schedule or enabled flag say.
	RunRequestedAt time.Time `json:"run_requested_at,omitzero"`
	Claim          *Claim    `json:"claim,omitempty"`

	LastRunAt       time.Time `json:"last_run_at,omitzero"`
	LastScheduledAt time.Time `json:"last_scheduled_at,omitzero"`
	LastStatus      string    `json:"last_status,omitempty"`
	LastError       string    `json:"last_error,omitempty"`
	Fires           int       `json:"fires"`
	// Unanswered counts fires in a row with no user response (auto-decay).
	Unanswered     int    `json:"unanswered,omitempty"`
	DisabledReason string `json:"disabled_reason,omitempty"`
}

// Claim marks a fire taken by one process. It is written under the lock
// before the fire runs, so no peer fires the same (job, scheduled time).
type Claim struct {
	PID   int    `json:"pid"`
	Owner string `json:"owner"` // random per-service token; pids are reused
	// Host is the claimant's hostname: its PID means something only there.
	// Empty in claims written by older builds (they wait for the TTL).
	Host        string    `json:"host,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at"`
	ScheduledAt time.Time `json:"scheduled_at"`
	// Forced marks a claim taken for a "cron run" request.
	Forced bool `json:"forced,omitempty"`
}

// Stale reports whether the claim is old enough to be taken over.
func (c *Claim) Stale(now time.Time, ttl time.Duration) bool {
	return c != nil && now.Sub(c.ClaimedAt) > ttl
}

// Abandoned reports whether the claimant is known to be gone: it claimed
// from this host and its pid no longer exists. A claim from another host
// (a shared data dir), or without a host, can only go stale.
func (c *Claim) Abandoned(host string, alive func(pid int) bool) bool {
	return c != nil && host != "" && c.Host == host && c.PID > 0 && !alive(c.PID)
}

// Mode is how a fire's output reaches the owner.
type Mode string

const (
	ModeSingle    Mode = "single"
	ModeBroadcast Mode = "broadcast"
	ModeSilent    Mode = "silent"
)

// Mode returns the job's delivery branch.
func (j *Job) Mode() Mode {
	switch {
	case j.Silent || (!j.Deliver && !j.Broadcast):
		return ModeSilent
	case j.Broadcast:
		return ModeBroadcast
	}
	return ModeSingle
}

// Conversation is the lane key of the job's turns.
func (j *Job) Conversation() string { return "cron:" + j.ID }

// DeliveryChannel is the channel the channel filter matches: the job's
// channel, "cli" when unset, and "broadcast" for broadcasts, which only a
// service allowing every channel (or "broadcast") fires.
func (j *Job) DeliveryChannel() string {
	if j.Broadcast {
		return "broadcast"
	}
	if j.Channel == "" {
		return "cli"
	}
	return j.Channel
}

// Spec is a request to create a job, from the CLI or the cron tool.
type Spec struct {
	Name      string
	Message   string
	Every     string
	Cron      string
	TZ        string
	At        string
	Deliver   bool
	Channel   string
	To        string
	Broadcast bool
	Silent    bool
}

// knownChannels are the channels a job may name. Internal channels (cron,
// heartbeat, sentinel) are not delivery targets.
var knownChannels = map[string]bool{"cli": true, "tui": true, "webhook": true, "telegram": true}

// KnownChannel reports whether name is a channel a job can deliver to.
func KnownChannel(name string) bool { return knownChannels[name] }

// NewJob validates spec against now and returns the job to store. Every
// problem is a typed error naming the offending value.
func NewJob(spec Spec, now time.Time) (Job, error) {
	name := strings.TrimSpace(spec.Name)
	switch {
	case name == "":
		return Job{}, fmt.Errorf("%w: name is required", ErrInvalidJob)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return Job{}, fmt.Errorf("%w: name longer than %d characters", ErrInvalidJob, MaxNameLen)
	case strings.TrimSpace(spec.Message) == "":
		return Job{}, fmt.Errorf("%w: message is required", ErrInvalidJob)
	case utf8.RuneCountInString(spec.Message) > MaxMessageLen:
		return Job{}, fmt.Errorf("%w: message longer than %d characters", ErrInvalidJob, MaxMessageLen)
	case spec.Broadcast && spec.Silent:
		return Job{}, fmt.Errorf("%w: broadcast and silent exclude each other", ErrInvalidJob)
	case spec.Silent && spec.Deliver:
		return Job{}, fmt.Errorf("%w: deliver and silent exclude each other", ErrInvalidJob)
	case spec.Broadcast && (spec.Channel != "" || spec.To != ""):
		return Job{}, fmt.Errorf("%w: broadcast delivers to every forward channel; drop channel/to", ErrInvalidJob)
	case spec.To != "" && spec.Channel == "":
		return Job{}, fmt.Errorf("%w: to needs a channel", ErrInvalidJob)
	case spec.Channel != "" && !KnownChannel(spec.Channel):
		return Job{}, fmt.Errorf("%w %q (want cli, tui, webhook or telegram)", ErrUnknownChannel, spec.Channel)
	}
	var s Schedule
	n := 0
	if spec.Every != "" {
		n++
		s = Schedule{Kind: KindEvery, Every: spec.Every}
	}
	if spec.Cron != "" {
		n++
		s = Schedule{Kind: KindCron, Expr: spec.Cron, TZ: spec.TZ}
	}
	if spec.At != "" {
		n++
		s = Schedule{Kind: KindAt, At: spec.At}
	}
	if n != 1 {
		return Job{}, fmt.Errorf("%w: give exactly one of every, cron or at", ErrInvalidSchedule)
	}
	if spec.TZ != "" && s.Kind != KindCron {
		return Job{}, fmt.Errorf("%w: tz applies to cron expressions only", ErrInvalidSchedule)
	}
	c, err := s.Validate(now)
	if err != nil {
		return Job{}, err
	}
	first, ok := c.First(now)
	if !ok {
		return Job{}, fmt.Errorf("%w: %s never fires", ErrInvalidSchedule, s)
	}
	return Job{
		ID:        newID(),
		Name:      name,
		Message:   spec.Message,
		Schedule:  s,
		Deliver:   spec.Deliver || spec.Broadcast,
		Channel:   spec.Channel,
		To:        spec.To,
		Broadcast: spec.Broadcast,
		Silent:    spec.Silent,
		Enabled:   true,
		CreatedAt: now,
		NextRunAt: first,
	}, nil
}

// newID returns 8 random hex digits: short enough to type, and unique in
// practice for one owner's jobs (Store.Add retries on the rare collision).
func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
