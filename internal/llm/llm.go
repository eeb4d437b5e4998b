// Package llm defines the model Provider interface Raven talks to and the
// message types shared by every provider (OpenAI-compatible, Anthropic, scripted).
package llm

import (
	"context"
	"errors"
	"fmt"
)

// Role is the author of a chat message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation sent to a model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a RoleTool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool name for RoleTool messages.
	Name string `json:"name,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the raw JSON text
// the model produced; it may be malformed, and the caller must validate it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool describes a callable tool: Parameters is a JSON Schema object.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// ToolChoice constrains tool use: "" or "auto", "required", "none", or a tool name.
type ToolChoice string

// Request is one model call.
type Request struct {
	Model       string
	Messages    []Message
	Tools       []Tool
	ToolChoice  ToolChoice
	MaxTokens   int      // 0 means the provider default
	Temperature *float64 // nil means the provider default
	// NoReasoning asks the provider not to spend reasoning effort (pinned by the planner).
	NoReasoning bool
	// OnDelta, when set, makes the call stream: it receives the response's
	// fragments in order, on the calling goroutine, before Chat returns the
	// assembled Response. It must not block. Providers that cannot stream
	// may ignore it.
	OnDelta func(Delta)
}

// Usage is the token accounting of one call. InputTokens counts every
// prompt token, cached or not, so providers compare; CachedTokens (read
// from the provider's prompt cache) and CacheWriteTokens (written to it)
// are the parts of InputTokens billed differently.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Response is a model's answer: text, tool calls, or both.
type Response struct {
	Content      string     `json:"content,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Usage        Usage      `json:"usage"`
}

// Provider is a chat model with tool calling.
type Provider interface {
	// Chat performs one call. It returns promptly when ctx ends.
	Chat(ctx context.Context, req Request) (*Response, error)
	// Name identifies the provider and model for logs, e.g. "openai/gpt-4o-mini".
	Name() string
}

// ErrNoModel is returned when no model is configured.
var ErrNoModel = errors.New("llm: no model configured (set \"model\" in config.json or RAVEN_MODEL, e.g. ollama/qwen2.5:7b)")

// ErrExhausted is returned by the scripted provider when its script has no turns left.
var ErrExhausted = errors.New("llm: scripted provider exhausted: no model turns left in the script")

// APIError is a failed call to a model endpoint.
type APIError struct {
	Provider   string
	URL        string
	StatusCode int // 0 when the endpoint was unreachable
	Message    string
	// RetryAfter is the raw Retry-After header of the response, if any
	// (seconds or an HTTP date); the retry wrapper interprets it.
	RetryAfter string
	Err        error
}

func (e *APIError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s: cannot reach %s: %s", e.Provider, e.URL, e.Message)
	}
	return fmt.Sprintf("%s: %s returned HTTP %d: %s", e.Provider, e.URL, e.StatusCode, e.Message)
}

func (e *APIError) Unwrap() error { return e.Err }

// Retryable reports whether the failure is transient: the endpoint was
// unreachable, rate limited (429) or failing on its side (5xx).
func (e *APIError) Retryable() bool {
	return e.StatusCode == 0 || e.StatusCode == 429 || e.StatusCode >= 500
}
