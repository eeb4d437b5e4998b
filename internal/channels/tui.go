package channels

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/spine"
)

// TUIChannel is the channel name of the operator TUI. It is ephemeral: the
// gateway's outlet reports spine.ErrNoOutlet when no TUI is attached to the
// conversation, so the message counts as not delivered.
const TUIChannel = "tui"

// ChatMessageMethod is the control-API notification that carries a message
// to attached TUI clients, with a ChatMessage payload.
const ChatMessageMethod = "chat.message"

// ChatMessage is the wire payload of a chat.message notification.
type ChatMessage struct {
	Conversation string `json:"conversation"`
	Content      string `json:"content"`
	Origin       string `json:"origin,omitempty"`
	// Proactive marks a message Raven sent on its own; the TUI marks it.
	Proactive bool `json:"proactive"`
	Reply     bool `json:"reply"`
}

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
