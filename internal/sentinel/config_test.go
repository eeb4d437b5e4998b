package sentinel

import (
	"errors"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// Validate names the key inside the section; config prefixes "sentinel."
// (and narrows Field "policy" to the policy key that failed).
func TestConfigValidateNamesField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"interval", func(c *Config) { c.Interval = configtype.Duration(time.Second) }, "interval"},
		{"sub-section", func(c *Config) { c.Routines.Max = 0 }, "routines.max"},
		{"defer order", func(c *Config) { c.DeferMaxWait = c.DeferIdle }, "defer_max_wait"},
		{"quiet days", func(c *Config) { c.Policy.QuietHours.Days = []time.Weekday{7} }, "policy.quiet_hours.days"},
		{"policy", func(c *Config) { c.Policy.DayQuota = -1 }, "policy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			var fe *configtype.FieldError
			if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate() = %v, want a FieldError on %q", err, tc.field)
			}
		})
	}
}
