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
	out, _, err := g.rt.Inbound().Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: p.Text,
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
	if err := g.attach(ctx, p.Conversation, c.Notifier()); err != nil {
		return nil, err
	}
	return map[string]any{"attached": p.Conversation}, nil
}
