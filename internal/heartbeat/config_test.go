package heartbeat

import (
	"errors"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

func TestDefaultConfigIsValidAndMatchesNew(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Interval.D() != DefaultInterval || c.MaxFileBytes != DefaultMaxFileBytes || c.TurnTimeout.D() != DefaultTurnTimeout || c.WakeMinInterval.D() != DefaultWakeMinInterval {
		t.Fatalf("DefaultConfig %+v differs from the Default* constants New applies", c)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"interval", func(c *Config) { c.Interval = configtype.Duration(time.Second) }, "interval"},
		{"wake guard", func(c *Config) { c.WakeMinInterval = 0 }, "wake_min_interval"},
		{"file cap", func(c *Config) { c.MaxFileBytes = 1 }, "max_file_bytes"},
		{"turn timeout", func(c *Config) { c.TurnTimeout = configtype.Duration(time.Second) }, "turn_timeout"},
		{"channel", func(c *Config) { c.Channel = "Tele gram" }, "channel"},
		{"chat without channel", func(c *Config) { c.ChatID = "1" }, "chat_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			var fe *configtype.FieldError
			if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want field %s", err, tc.field)
			}
		})
	}
}
