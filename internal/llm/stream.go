package llm

import (
	"context"
	"errors"
	"fmt"
)

// Delta is a fragment of a response while the model writes it. A streaming
// call still returns the assembled *Response: deltas are for showing
// progress, the Response is what the caller acts on.
type Delta struct {
	// Text is reply text appended since the previous delta.
	Text string
	// ToolCall is a fragment of a tool call, nil for text.
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a piece of one tool call: the first piece of a call
// carries its ID and Name, later pieces extend Arguments.
type ToolCallDelta struct {
	// Index is the call's position among the response's tool calls.
	Index     int
	ID        string
	Name      string
	Arguments string
}

// ErrStreamBroken is wrapped by the error of a streamed call whose stream
// ended before the response was complete.
var ErrStreamBroken = errors.New("llm: model stream ended before the response was complete")

// StreamError is the error of a stream that broke after a success status:
// a transient failure (StatusCode 0, so retryable), which the retry wrapper
// still refuses to retry once any delta reached the caller.
func StreamError(ctx context.Context, provider, endpoint string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: stream %s: %w", provider, endpoint, ctxErr)
	}
	return &APIError{Provider: provider, URL: endpoint, Message: "stream broke: " + oneLine(err),
		Err: fmt.Errorf("%w: %w", ErrStreamBroken, err)}
}

// ErrStreamStarted is wrapped by the error of a streamed call that failed
// after its first delta: it was not retried, since the caller had already
// shown part of a reply a new attempt would write differently.
var ErrStreamStarted = errors.New("llm: the reply had started streaming, so the call was not retried")
