package gateway

import (
	"context"
	"strings"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/spine"
)

func (g *Gateway) chatSend(ctx context.Context, c *controlapi.Call, p api.ChatSendParams) (api.ChatSendResult, error) {
	ch, id, ok := spine.SplitConversationKey(p.Conversation)
	if !ok {
		return api.ChatSendResult{}, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	if strings.TrimSpace(p.Text) == "" {
		return api.ChatSendResult{}, controlapi.InvalidParams("text is empty")
	}
	out, _, err := g.rt.Inbound().Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: p.Text,
		Extras: map[string]any{"principal": c.Principal.Name}})
	if err != nil {
		return api.ChatSendResult{}, err
	}
	return api.ChatSendResult{Outcome: out.String()}, nil
}

func (g *Gateway) chatAttach(ctx context.Context, c *controlapi.Call, p api.ChatAttachParams) (api.ChatAttachResult, error) {
	if _, _, ok := spine.SplitConversationKey(p.Conversation); !ok {
		return api.ChatAttachResult{}, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	if err := g.attach(ctx, p.Conversation, c.Notifier()); err != nil {
		return api.ChatAttachResult{}, err
	}
	return api.ChatAttachResult{Attached: p.Conversation}, nil
}
