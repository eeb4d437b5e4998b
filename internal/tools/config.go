package tools

import (
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// The defaults of the tools.exec section; NewExec applies the same ones to
// zero arguments.
const (
	DefaultExecTimeout   = 60 * time.Second
	DefaultExecMaxOutput = 16 << 10
)

// ExecConfig is the "tools.exec" section of config.json.
type ExecConfig struct {
	Enabled   bool                `json:"enabled"`
	Timeout   configtype.Duration `json:"timeout"`
	MaxOutput int                 `json:"max_output"`
	// Deny lists extra command patterns refused on top of the built-in list.
	Deny []string `json:"deny,omitempty"`
}

// DefaultExecConfig returns the documented defaults (exec on).
func DefaultExecConfig() ExecConfig {
	return ExecConfig{Enabled: true, Timeout: configtype.Duration(DefaultExecTimeout), MaxOutput: DefaultExecMaxOutput}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c ExecConfig) Validate() error {
	switch {
	case c.Timeout.D() < time.Second:
		return configtype.Invalid("timeout", "must be at least 1s")
	case c.MaxOutput < 256:
		return configtype.Invalid("max_output", "must be at least 256 bytes")
	}
	return nil
}
