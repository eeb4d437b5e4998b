// Package tools is the agent's tool registry: JSON-schema described tools,
// strict argument validation, and the built-in file, exec, message and spawn tools.
package tools

import (
	"context"
	"encoding/json"

	"github.com/raven-agent/raven/internal/spine"
)

// Tool is something the model can call.
type Tool interface {
	Name() string
	Description() string
	// Parameters is the JSON Schema (type object) of the arguments.
	Parameters() map[string]any
	// Run executes the call. An error is reported back to the model as the
	// tool result; it never ends the turn.
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// TurnInfo describes the turn a tool call runs in.
type TurnInfo struct {
	Origin       spine.Origin
	Conversation string
	Channel      string
	ChatID       string
	// FromCron is set for a cron turn and for every subagent it spawned,
	// so scheduling cannot be laundered through a subagent.
	FromCron bool
}

// ExtraFromCron marks a TurnRequest (in Extras) as descending from a cron turn.
const ExtraFromCron = "from_cron"

// WaitsForOwner is implemented by tools whose run is mostly waiting for a
// person (ask_user); the agent does not apply its per-tool work timeout.
type WaitsForOwner interface {
	WaitsForOwner() bool
}

type turnKey struct{}

// WithTurn returns ctx carrying the running turn's description, so tools can
// find their session (nudge_feedback) or refuse to run (cron inside a cron turn).
func WithTurn(ctx context.Context, t TurnInfo) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// TurnFrom returns the running turn's description, if any.
func TurnFrom(ctx context.Context) (TurnInfo, bool) {
	t, ok := ctx.Value(turnKey{}).(TurnInfo)
	return t, ok
}
