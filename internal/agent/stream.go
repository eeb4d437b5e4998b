package agent

import (
	"context"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

// deltas returns the model-call delta sink of a turn, or nil when the turn
// does not stream: only replies someone is waiting to read (the owner's
// turns and the continuations of their answers) stream, never proactive or
// subagent turns, whose output is decided on before anyone sees it.
func (a *Agent) deltas(ctx context.Context, req spine.TurnRequest) func(llm.Delta) {
	if a.o.Stream == nil || !a.o.Config.Stream || !req.Origin.UserInbound() {
		return nil
	}
	return func(d llm.Delta) {
		// Tool-call fragments are shown once each call is whole
		// (streamToolCalls): half a JSON argument tells the owner nothing.
		if d.Text != "" {
			a.o.Stream.Stream(ctx, spine.Delta{Channel: req.Channel, ChatID: req.ChatID, Text: d.Text})
		}
	}
}

// streamToolCalls tells the streaming surfaces which tools the model is
// about to run, one note per call. A tool that puts a question to the
// owner (ask_user) gets none: the question itself is what they see.
func (a *Agent) streamToolCalls(ctx context.Context, req spine.TurnRequest, calls []llm.ToolCall) {
	for _, c := range calls {
		if t, ok := a.o.Tools.Get(c.Name); ok && waitsForOwner(t) {
			continue
		}
		a.o.Stream.Stream(ctx, spine.Delta{Channel: req.Channel, ChatID: req.ChatID,
			Tool: &spine.ToolNote{Name: c.Name, Arguments: c.Arguments}})
	}
}
