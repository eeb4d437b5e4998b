package gateway

import (
	"context"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

// connSurface is one chat.attach connection as a runtime surface: messages
// for its conversation go out as chat.message notifications. A slow
// connection's bounded queue drops it, never the gateway.
type connSurface struct{ n controlapi.Notifier }

func (s connSurface) Deliver(_ context.Context, m spine.Message) error {
	return controlapi.Notify(s.n, api.NotifyChatMessage, api.ChatMessage{Conversation: spine.ConversationKey(m.Channel, m.ChatID),
		Content: m.Content, Origin: string(m.Origin), Proactive: m.Proactive, Reply: m.Reply})
}

// Stream sends a reply delta as chat.delta; the whole reply still follows
// as chat.message.
func (s connSurface) Stream(_ context.Context, d spine.Delta) {
	cd := api.ChatDelta{Conversation: spine.ConversationKey(d.Channel, d.ChatID), Text: d.Text}
	if d.Tool != nil {
		cd.Tool = &api.ToolNote{Name: d.Tool.Name, Arguments: d.Tool.Arguments}
	}
	controlapi.Notify(s.n, api.NotifyChatDelta, cd) // a dead connection is detached when Done closes
}

// tuiSurface is a TUI connection: it also draws ask_user questions itself
// from clarify.request, so they are not sent to it as text.
type tuiSurface struct{ connSurface }

func (s tuiSurface) Ask(req questions.ClarifyRequest) {
	controlapi.Notify(s.n, api.NotifyClarifyRequest, req) // a dead connection is detached when Done closes
}

// attachKey is one connection following one conversation: a repeated
// chat.attach on it changes nothing.
type attachKey struct {
	conv string
	n    controlapi.Notifier
}

// attach follows conv on n until n's connection ends, delivers the owner's
// pending outbox items to it, and shows it the question ask_user is waiting
// on there, if any: it was sent before n attached. A question asked in
// between may reach n twice (same batch and index), never not at all.
func (g *Gateway) attach(ctx context.Context, conv string, n controlapi.Notifier) error {
	key := attachKey{conv, n}
	g.attachMu.Lock()
	_, again := g.attached[key]
	if !again {
		g.attached[key] = struct{}{}
	}
	g.attachMu.Unlock()
	if !again {
		var surf runtime.Surface = connSurface{n}
		if ch, _, _ := spine.SplitConversationKey(conv); ch == channels.TUIChannel {
			surf = tuiSurface{connSurface{n}}
		}
		detach, err := g.rt.AttachOwner(ctx, conv, surf)
		if err != nil {
			g.attachMu.Lock()
			delete(g.attached, key)
			g.attachMu.Unlock()
			return controlapi.InvalidParams("%v", err)
		}
		go func() {
			<-n.Done()
			detach()
			g.attachMu.Lock()
			delete(g.attached, key)
			g.attachMu.Unlock()
		}()
	}
	if req, ok := g.rt.Broker().Pending(conv); ok {
		if err := controlapi.Notify(n, api.NotifyClarifyRequest, req); err != nil {
			g.rt.Logger().Debug("clarify.request not resent on attach", "conversation", conv, "err", err)
		}
	}
	return nil
}
