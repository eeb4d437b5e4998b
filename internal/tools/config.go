package tools

import (
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/sandbox"
)

// The defaults of the tools.exec section; NewExec applies the same ones to
// zero arguments.
const (
	DefaultExecTimeout   = 60 * time.Second
	DefaultExecMaxOutput = 16 << 10
	// DefaultApprovalTTL is how long an exec approval request waits for
	// the owner before it expires.
	DefaultApprovalTTL = 10 * time.Minute
)

// ExecConfig is the "tools.exec" section of config.json.
type ExecConfig struct {
	Enabled   bool                `json:"enabled"`
	Timeout   configtype.Duration `json:"timeout"`
	MaxOutput int                 `json:"max_output"`
	// Deny lists extra command patterns refused on top of the built-in list.
	Deny []string `json:"deny,omitempty"`
	// Network lets commands use the network without asking the owner.
	Network bool `json:"network"`
	// Unsandboxed is what exec does where no OS sandbox exists:
	// UnsandboxedOff refuses every command, UnsandboxedApprove asks the
	// owner to approve each one. Never silently unconfined.
	Unsandboxed string `json:"unsandboxed"`
	// ApprovalTTL bounds how long a command waits for the owner.
	ApprovalTTL configtype.Duration `json:"approval_ttl"`
	// EnvAllow names environment variables passed to commands beyond the
	// fixed minimal set; secret-looking names are refused.
	EnvAllow []string `json:"env_allow,omitempty"`
}

// DefaultExecConfig returns the documented defaults (exec on).
func DefaultExecConfig() ExecConfig {
	return ExecConfig{Enabled: true, Timeout: configtype.Duration(DefaultExecTimeout), MaxOutput: DefaultExecMaxOutput,
		Unsandboxed: UnsandboxedOff, ApprovalTTL: configtype.Duration(DefaultApprovalTTL)}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c ExecConfig) Validate() error {
	switch {
	case c.Timeout.D() < time.Second:
		return configtype.Invalid("timeout", "must be at least 1s")
	case c.MaxOutput < 256:
		return configtype.Invalid("max_output", "must be at least 256 bytes")
	case c.Unsandboxed != UnsandboxedOff && c.Unsandboxed != UnsandboxedApprove:
		return configtype.Invalid("unsandboxed", "must be %q or %q", UnsandboxedOff, UnsandboxedApprove)
	case c.ApprovalTTL.D() < 10*time.Second || c.ApprovalTTL.D() > 24*time.Hour:
		return configtype.Invalid("approval_ttl", "must be between 10s and 24h")
	}
	for _, n := range c.EnvAllow {
		switch {
		case n == "" || strings.ContainsAny(n, "= \t\n\r\x00"):
			return configtype.Invalid("env_allow", "%q is not a variable name", n)
		case sandbox.LooksSecret(n):
			return configtype.Invalid("env_allow", "%q looks like a secret and is never passed to commands", n)
		}
	}
	return nil
}

// DefaultSearchThreshold is tools.search_threshold's default: with more
// tools than this in the registry, the external (MCP) ones are reached
// through tool_search instead of being offered on every model call. About
// forty schemas is where tool lists start to cost more context than most
// turns' conversation.
const DefaultSearchThreshold = 40

// maxSearchThreshold bounds the setting: past it every schema would be
// sent on every call, which is what the threshold exists to prevent.
const maxSearchThreshold = 1000

// CheckSearchThreshold validates tools.search_threshold as a
// *configtype.FieldError on "search_threshold".
func CheckSearchThreshold(n int) error {
	if n < 1 || n > maxSearchThreshold {
		return configtype.Invalid("search_threshold", "must be between 1 and %d", maxSearchThreshold)
	}
	return nil
}
