package providers

import (
	"time"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/llm"
)

// Config is the "providers" section of config.json: the endpoints of the
// model providers and the retry and timeout of one model call. Secrets are
// better given through the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY),
// which wins over the file.
type Config struct {
	OpenAI    EndpointConfig `json:"openai"`
	Anthropic EndpointConfig `json:"anthropic"`
	Ollama    EndpointConfig `json:"ollama"`
	// MaxAttempts bounds retries on 429/5xx per model call.
	MaxAttempts int `json:"max_attempts"`
	// Timeout bounds one HTTP attempt (default DefaultTimeout).
	Timeout configtype.Duration `json:"timeout"`
}

// EndpointConfig is one provider endpoint.
type EndpointConfig struct {
	APIKey  string `json:"api_key,omitempty" config:"secret"`
	BaseURL string `json:"base_url,omitempty"`
}

// DefaultConfig returns the documented defaults: llm.DefaultMaxAttempts
// tries of at most DefaultTimeout each.
func DefaultConfig() Config {
	return Config{MaxAttempts: llm.DefaultMaxAttempts, Timeout: configtype.Duration(DefaultTimeout)}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c Config) Validate() error {
	for _, ep := range []struct {
		name string
		e    EndpointConfig
	}{{"openai", c.OpenAI}, {"anthropic", c.Anthropic}, {"ollama", c.Ollama}} {
		if ep.e.BaseURL != "" && !configtype.AbsoluteHTTP(ep.e.BaseURL) {
			return configtype.Invalid(ep.name+".base_url", "want an absolute http(s) URL")
		}
		if !configtype.OneLine(ep.e.APIKey) {
			return configtype.Invalid(ep.name+".api_key", "must be one line without control characters")
		}
	}
	switch {
	case c.MaxAttempts < 1 || c.MaxAttempts > 10:
		return configtype.Invalid("max_attempts", "must be 1..10")
	case c.Timeout.D() < time.Second:
		return configtype.Invalid("timeout", "must be at least 1s")
	}
	return nil
}
