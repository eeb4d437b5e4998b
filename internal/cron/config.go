package cron

import (
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// The defaults of the cron section; NewService and NewStore apply the same
// ones to zero options.
const (
	DefaultMaxSleep      = time.Second
	DefaultClaimTTL      = 15 * time.Minute
	DefaultJobTimeout    = 10 * time.Minute
	DefaultLockTimeout   = 5 * time.Second
	DefaultDecayAfter    = 12
	DefaultMaxConcurrent = 4
)

// Config is the "cron" section of config.json.
type Config struct {
	Enabled bool `json:"enabled"`
	// MaxSleep caps the timer loop's sleep so a job added or edited by a
	// peer process is seen within this delay. Each wake costs one stat(2)
	// of jobs.json; the file is re-read only when it changed.
	MaxSleep configtype.Duration `json:"max_sleep"`
	// ClaimTTL is how long a claim taken by a process that then died blocks
	// the job before another process takes it over. It must exceed
	// JobTimeout so a live, slow fire is never taken over.
	ClaimTTL configtype.Duration `json:"claim_ttl"`
	// JobTimeout bounds one fire (the agent turn and its delivery).
	JobTimeout configtype.Duration `json:"job_timeout"`
	// LockTimeout bounds the wait for jobs.json.lock held by a peer.
	LockTimeout configtype.Duration `json:"lock_timeout"`
	// DecayAfter disables a recurring delivering job after this many fires
	// in a row with no user response; 0 turns auto-decay off.
	DecayAfter int `json:"decay_after"`
	// MaxConcurrent bounds fires running at once in one process.
	MaxConcurrent int `json:"max_concurrent"`
}

// DefaultConfig returns the documented defaults (cron on).
func DefaultConfig() Config {
	return Config{
		Enabled:       true,
		MaxSleep:      configtype.Duration(DefaultMaxSleep),
		ClaimTTL:      configtype.Duration(DefaultClaimTTL),
		JobTimeout:    configtype.Duration(DefaultJobTimeout),
		LockTimeout:   configtype.Duration(DefaultLockTimeout),
		DecayAfter:    DefaultDecayAfter,
		MaxConcurrent: DefaultMaxConcurrent,
	}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c Config) Validate() error {
	switch {
	case c.MaxSleep.D() < 10*time.Millisecond || c.MaxSleep.D() > time.Minute:
		return configtype.Invalid("max_sleep", "must be 10ms..1m")
	case c.JobTimeout.D() < time.Second:
		return configtype.Invalid("job_timeout", "must be at least 1s")
	case c.ClaimTTL <= c.JobTimeout:
		return configtype.Invalid("claim_ttl", "must be longer than cron.job_timeout, so a running fire is never taken over")
	case c.LockTimeout.D() < 10*time.Millisecond:
		return configtype.Invalid("lock_timeout", "must be at least 10ms")
	case c.DecayAfter < 0:
		return configtype.Invalid("decay_after", "must be 0 (off) or positive")
	case c.MaxConcurrent < 1 || c.MaxConcurrent > 64:
		return configtype.Invalid("max_concurrent", "must be 1..64")
	}
	return nil
}
