package config

import "time"

// CronConfig configures the cron service (internal/cron).
type CronConfig struct {
	Enabled bool `json:"enabled"`
	// MaxSleep caps the timer loop's sleep so a job added or edited by a
	// peer process is seen within this delay. Each wake costs one stat(2)
	// of jobs.json; the file is re-read only when it changed. Default 1s.
	MaxSleep Duration `json:"max_sleep"`
	// ClaimTTL is how long a claim taken by a process that then died blocks
	// the job before another process takes it over. It must exceed
	// JobTimeout so a live, slow fire is never taken over. Default 15m.
	ClaimTTL Duration `json:"claim_ttl"`
	// JobTimeout bounds one fire (the agent turn and its delivery). Default 10m.
	JobTimeout Duration `json:"job_timeout"`
	// LockTimeout bounds the wait for jobs.json.lock held by a peer. Default 5s.
	LockTimeout Duration `json:"lock_timeout"`
	// DecayAfter disables a recurring delivering job after this many fires
	// in a row with no user response; 0 turns auto-decay off. Default 12.
	DecayAfter int `json:"decay_after"`
	// MaxConcurrent bounds fires running at once in one process. Default 4.
	MaxConcurrent int `json:"max_concurrent"`
}

func defaultCron() CronConfig {
	return CronConfig{
		Enabled:       true,
		MaxSleep:      Duration(time.Second),
		ClaimTTL:      Duration(15 * time.Minute),
		JobTimeout:    Duration(10 * time.Minute),
		LockTimeout:   Duration(5 * time.Second),
		DecayAfter:    12,
		MaxConcurrent: 4,
	}
}

func (c CronConfig) validate() error {
	switch {
	case c.MaxSleep < Duration(10*time.Millisecond) || c.MaxSleep > Duration(time.Minute):
		return &Error{Key: "cron.max_sleep", Msg: "must be 10ms..1m"}
	case c.JobTimeout < Duration(time.Second):
		return &Error{Key: "cron.job_timeout", Msg: "must be at least 1s"}
	case c.ClaimTTL <= c.JobTimeout:
		return &Error{Key: "cron.claim_ttl", Msg: "must be longer than cron.job_timeout, so a running fire is never taken over"}
	case c.LockTimeout < Duration(10*time.Millisecond):
		return &Error{Key: "cron.lock_timeout", Msg: "must be at least 10ms"}
	case c.DecayAfter < 0:
		return &Error{Key: "cron.decay_after", Msg: "must be 0 (off) or positive"}
	case c.MaxConcurrent < 1 || c.MaxConcurrent > 64:
		return &Error{Key: "cron.max_concurrent", Msg: "must be 1..64"}
	}
	return nil
}
