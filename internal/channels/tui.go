package channels

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/spine"
)

// TUIChannel is the channel name of the operator TUI. It is ephemeral: the
// gateway's outlet reports spine.ErrNoOutlet when no TUI is attached to the
// conversation, so the message counts as not delivered.
const TUIChannel = "tui"

// ChatMessageMethod is the wire name of the control-API notification that
// carries a message to attached TUI clients (api.NotifyChatMessage).
const ChatMessageMethod = string(api.NotifyChatMessage)

// ChatMessage is the wire payload of a chat.message notification; the
// contract declares it.
type ChatMessage = api.ChatMessage

// TUI is the outlet of the tui channel: it hands each message to publish,
// which the gateway wires to the control API's notification fan-out.
type TUI struct {
	publish func(ctx context.Context, m ChatMessage) error
}

// NewTUI returns the tui outlet.
func NewTUI(publish func(ctx context.Context, m ChatMessage) error) *TUI {
	return &TUI{publish: publish}
}

// Deliver publishes m to attached TUI clients. Content is sent verbatim
// with the Proactive flag set; the client renders the marker.
func (t *TUI) Deliver(ctx context.Context, m spine.Message) error {
	cm := ChatMessage{
		Conversation: spine.ConversationKey(m.Channel, m.ChatID),
		Content:      m.Content,
		Origin:       string(m.Origin),
		Proactive:    m.Proactive,
		Reply:        m.Reply,
	}
	if err := t.publish(ctx, cm); err != nil {
		return fmt.Errorf("channels: tui publish: %w", err)
	}
	return nil
}
