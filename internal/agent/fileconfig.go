package agent

import (
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// FileConfig is the "agent" section of config.json: the file form of
// Config, with durations written as "5m".
type FileConfig struct {
	SystemPrompt string `json:"system_prompt,omitempty"`
	// MaxIterations caps model calls per turn.
	MaxIterations int `json:"max_iterations"`
	// HistoryTailBytes is how much of HISTORY.md's end goes into the prompt.
	HistoryTailBytes int `json:"history_tail_bytes"`
	// MemoryBytes is how much of MEMORY.md's head goes into the prompt; the
	// prompt says when the file is longer (the rest is found by memory_search).
	MemoryBytes int `json:"memory_bytes"`
	// RecentMessages is how many session messages go into the prompt.
	RecentMessages int `json:"recent_messages"`
	MaxTokens      int `json:"max_tokens"`
	// ToolTimeout bounds one tool call's work (ask_user's wait for the
	// owner is not counted: it has its own budget).
	ToolTimeout configtype.Duration `json:"tool_timeout"`
	// Stream shows replies on the surfaces that can (chat, TUI, Telegram)
	// while the model writes them; `raven chat --no-stream` turns it off
	// for one run.
	Stream bool `json:"stream"`
}

// DefaultStream is agent.stream's default: replies stream.
const DefaultStream = true

// DefaultFileConfig returns the documented defaults.
func DefaultFileConfig() FileConfig {
	return FileConfig{
		MaxIterations:    DefaultMaxIterations,
		HistoryTailBytes: DefaultHistoryTailBytes,
		MemoryBytes:      DefaultMemoryBytes,
		RecentMessages:   DefaultRecentMessages,
		MaxTokens:        DefaultMaxTokens,
		ToolTimeout:      configtype.Duration(DefaultToolTimeout),
		Stream:           DefaultStream,
	}
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c FileConfig) Validate() error {
	switch {
	case c.MaxIterations < 1 || c.MaxIterations > 200:
		return configtype.Invalid("max_iterations", "must be 1..200")
	case c.HistoryTailBytes < 0 || c.HistoryTailBytes > 1<<20:
		return configtype.Invalid("history_tail_bytes", "must be 0..1048576")
	case c.MemoryBytes < 1024 || c.MemoryBytes > 1<<20:
		return configtype.Invalid("memory_bytes", "must be 1024..1048576")
	case c.RecentMessages < 0 || c.RecentMessages > 1000:
		return configtype.Invalid("recent_messages", "must be 0..1000")
	case c.MaxTokens < 1:
		return configtype.Invalid("max_tokens", "must be positive")
	case c.ToolTimeout.D() < time.Second:
		return configtype.Invalid("tool_timeout", "must be at least 1s")
	}
	return nil
}
