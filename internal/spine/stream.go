package spine

import "context"

// Delta is part of a turn's reply while the model writes it, for the
// outlets and surfaces that show replies as they arrive. The reply itself
// is still delivered whole, as a Message with Reply set, once the turn ends.
type Delta struct {
	Channel string
	ChatID  string
	// Text is reply text appended since the previous delta.
	Text string
	// Tool, when set instead of Text, is a tool call the model made. The
	// text streamed before it was a preamble, not the reply: the reply
	// starts again after it.
	Tool *ToolNote
}

// ToolNote names one tool call in a stream.
type ToolNote struct {
	Name      string
	Arguments string
}

// Streamer is an outlet or surface that shows replies while they are
// written. Stream is called on the turn's goroutine, in order, before the
// reply's Deliver: it must not block on the network or a person.
type Streamer interface {
	Stream(ctx context.Context, d Delta)
}

// Stream hands d to its channel's outlet if that outlet streams. Outlets
// that do not just get the whole reply later: webhook replies stay whole.
func (h *Hub) Stream(ctx context.Context, d Delta) {
	h.mu.RLock()
	o, ok := h.outlets[d.Channel]
	h.mu.RUnlock()
	s, ok2 := o.(Streamer)
	if ok && ok2 {
		s.Stream(ctx, d)
	}
}
