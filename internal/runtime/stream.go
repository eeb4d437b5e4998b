package runtime

import (
	"context"

	"github.com/raven-agent/raven/internal/spine"
)

// surfaceOutlet is the hub outlet of cli and tui: messages and reply
// deltas reach the surfaces attached to their conversation.
type surfaceOutlet struct{ ss *surfaces }

func (o surfaceOutlet) Deliver(ctx context.Context, m spine.Message) error {
	return o.ss.deliver(ctx, m)
}

// Stream hands d to the attached surfaces that stream; the others get the
// whole reply when the turn ends.
func (o surfaceOutlet) Stream(ctx context.Context, d spine.Delta) {
	for _, s := range o.ss.of(spine.ConversationKey(d.Channel, d.ChatID)) {
		if st, ok := s.(spine.Streamer); ok {
			st.Stream(ctx, d)
		}
	}
}
