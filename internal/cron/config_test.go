package cron

import (
	"errors"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(c *Config)
		field string
	}{
		{"defaults", func(c *Config) {}, ""},
		{"sleep too short", func(c *Config) { c.MaxSleep = configtype.Duration(time.Millisecond) }, "max_sleep"},
		{"sleep too long", func(c *Config) { c.MaxSleep = configtype.Duration(time.Hour) }, "max_sleep"},
		{"job timeout", func(c *Config) { c.JobTimeout = 0 }, "job_timeout"},
		{"claim ttl not above job timeout", func(c *Config) { c.ClaimTTL = c.JobTimeout }, "claim_ttl"},
		{"lock timeout", func(c *Config) { c.LockTimeout = 0 }, "lock_timeout"},
		{"decay negative", func(c *Config) { c.DecayAfter = -1 }, "decay_after"},
		{"decay off", func(c *Config) { c.DecayAfter = 0 }, ""},
		{"concurrency", func(c *Config) { c.MaxConcurrent = 65 }, "max_concurrent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			var fe *configtype.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("unexpected %v", err)
			case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field):
				t.Fatalf("err %v, want field %s", err, tt.field)
			}
		})
	}
}
