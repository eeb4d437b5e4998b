package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/raven-agent/raven/internal/llm"
)

// Registry holds the tools offered to the model.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	// external names the tools that come from outside Raven (MCP servers):
	// past a threshold they are reached through tool_search instead of
	// being offered on every call.
	external map[string]bool
}

// NewRegistry returns a registry holding ts.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{tools: make(map[string]Tool), external: make(map[string]bool)}
	for _, t := range ts {
		r.Register(t)
	}
	return r
}

// Register adds or replaces t.
func (r *Registry) Register(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[t.Name()] = t
}

// RegisterExternal adds or replaces t, a tool from outside Raven (an MCP
// server's).
func (r *Registry) RegisterExternal(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[t.Name()] = t
	r.external[t.Name()] = true
}

// Unregister removes the tool called name, if any: a live config reload
// that turns a tool off.
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tools, name)
	delete(r.external, name)
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Defs describes every tool for a model request, sorted by name so prompts
// are stable.
func (r *Registry) Defs() []llm.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]llm.Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, llm.Tool{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run validates a model's tool call against the tool's schema and runs it.
// Every failure comes back as an error meant for the model to read and
// correct; none of them ends the turn.
func (r *Registry) Run(ctx context.Context, call llm.ToolCall) (string, error) {
	t, ok := r.Get(call.Name)
	if !ok {
		return "", fmt.Errorf("unknown tool %q", call.Name)
	}
	raw := json.RawMessage(call.Arguments)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var args any
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("arguments for %s are not valid JSON: %v", call.Name, err)
	}
	if err := Validate(t.Parameters(), args); err != nil {
		return "", fmt.Errorf("invalid arguments for %s: %w", call.Name, err)
	}
	return t.Run(ctx, raw)
}
