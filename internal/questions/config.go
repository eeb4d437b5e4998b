package questions

import (
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// AskUserConfig is the "tools.ask_user" section of config.json.
type AskUserConfig struct {
	// Timeout is the one budget shared by every question of one call.
	Timeout configtype.Duration `json:"timeout"`
}

// DefaultAskUserConfig returns the documented defaults.
func DefaultAskUserConfig() AskUserConfig {
	return AskUserConfig{Timeout: configtype.Duration(DefaultAskBudget)}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c AskUserConfig) Validate() error {
	if c.Timeout.D() < time.Second {
		return configtype.Invalid("timeout", "must be at least 1s")
	}
	return nil
}
