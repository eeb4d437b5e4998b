package providers

import (
	"errors"
	"testing"

	"github.com/raven-agent/raven/internal/configtype"
)

// The section's timeout default is the one New applies to a zero timeout:
// a second copy that disagreed is what this guards against.
func TestDefaultConfigTimeoutIsDefaultTimeout(t *testing.T) {
	c := DefaultConfig()
	if c.Timeout.D() != DefaultTimeout {
		t.Fatalf("providers.timeout default %v, want DefaultTimeout %v", c.Timeout.D(), DefaultTimeout)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"openai base url", func(c *Config) { c.OpenAI.BaseURL = "localhost:8080" }, "openai.base_url"},
		{"anthropic key newline", func(c *Config) { c.Anthropic.APIKey = "k\n" }, "anthropic.api_key"},
		{"ollama base url", func(c *Config) { c.Ollama.BaseURL = "ftp://x" }, "ollama.base_url"},
		{"attempts zero", func(c *Config) { c.MaxAttempts = 0 }, "max_attempts"},
		{"attempts high", func(c *Config) { c.MaxAttempts = 11 }, "max_attempts"},
		{"timeout short", func(c *Config) { c.Timeout = configtype.Duration(0) }, "timeout"},
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
