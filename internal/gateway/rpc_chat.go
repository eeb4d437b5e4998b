package gateway

import (
	"context"
	"strings"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/spine"
)

// chatSendParams is the strict DTO of chat.send.
type chatSendParams struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
}

func (g *Gateway) chatSend(ctx context.Context, c *controlapi.Call) (any, error) {
	var p chatSendParams
	if err := controlapi.DecodeStrict(c.Params, &p); err != nil {
		return nil, err
	}
	ch, id, ok := spine.SplitConversationKey(p.Conversation)
	if !ok {
		return nil, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, controlapi.InvalidParams("text is empty")
	}
	out, _, err := g.Inbound.Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: p.Text,
		Extras: map[string]any{"principal": c.Principal.Name}})
	if err != nil {
		return nil, err
	}
	return map[string]any{"outcome": out.String()}, nil
}

type chatAttachParams struct {
	Conversation string `json:"conversation"`
}

func (g *Gateway) chatAttach(ctx context.Context, c *controlapi.Call) (any, error) {
	var p chatAttachParams
	if err := controlapi.DecodeStrict(c.Params, &p); err != nil {
		return nil, err
	}
	if _, _, ok := spine.SplitConversationKey(p.Conversation); !ok {
		return nil, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	g.attach(p.Conversation, c.Notifier())
	return map[string]any{"attached": p.Conversation}, nil
}

// attach follows conv on n and shows n the question ask_user is waiting on
// there, if any: it was sent before n attached. A question asked in between
// may reach n twice (same batch and index), never not at all.
func (g *Gateway) attach(conv string, n controlapi.Notifier) {
	g.attached.attach(conv, n)
	if b := g.App.Broker; b != nil {
		if req, ok := b.Pending(conv); ok {
			if err := n.Notify(clarifyRequestMethod, req); err != nil {
				g.App.Log.Debug("clarify.request not resent on attach", "conversation", conv, "err", err)
			}
		}
	}
}

// clarifyRequestMethod is the notification carrying an ask_user question
// to attached TUI clients.
const clarifyRequestMethod = "clarify.request"
