package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/spine"
)

// cliChannel is the terminal chat's channel; its one conversation is
// cli:direct.
const (
	cliChannel = "cli"
	cliChatID  = "direct"
)

// deliverCLI forwards a message for the terminal to the `raven chat`
// sessions attached to its conversation (chat.attach). The terminal is a
// separate process, so with none attached the message reached nobody: the
// error says so, and a nudge is then not charged as delivered.
func (g *Gateway) deliverCLI(_ context.Context, m spine.Message) error {
	id := m.ChatID
	if id == "" {
		id = cliChatID // cron resolves cli with no known chat to the bare channel
	}
	conv := spine.ConversationKey(cliChannel, id)
	cm := channels.ChatMessage{Conversation: conv, Content: m.Content, Origin: string(m.Origin), Proactive: m.Proactive, Reply: m.Reply}
	if g.attached.notify(conv, channels.ChatMessageMethod, cm) == 0 {
		return fmt.Errorf("%w %q: no raven chat attached to %s", spine.ErrNoOutlet, cliChannel, conv)
	}
	return nil
}

// publishTUI forwards a message for the TUI to the clients attached to its
// conversation. Like deliverCLI, reaching nobody is an error wrapping
// spine.ErrNoOutlet, so a nudge or cron delivery to an unwatched TUI is not
// counted (or charged) as delivered.
func (g *Gateway) publishTUI(_ context.Context, m channels.ChatMessage) error {
	if g.attached.notify(m.Conversation, channels.ChatMessageMethod, m) == 0 {
		return fmt.Errorf("%w %q: no TUI attached to %s", spine.ErrNoOutlet, channels.TUIChannel, m.Conversation)
	}
	return nil
}

func (g *Gateway) startChannels(o DaemonOptions) error {
	a := g.App
	cc := a.Config.Channels
	if wc := cc.Webhook; wc.Enabled {
		secret := wc.EffectiveSecret(os.Getenv)
		h, err := channels.NewWebhookHandler(channels.WebhookHandlerOptions{Name: wc.Name, Secret: []byte(secret),
			Window: wc.Window.D(), MaxBody: wc.MaxBody, Inbound: g.Inbound.Inbound, Clock: a.Clock, Log: a.Log.With("channel", "webhook")})
		if err != nil {
			return err
		}
		if wc.OutboundURL != "" {
			out, err := channels.NewWebhookOutlet(channels.WebhookOutletOptions{URL: wc.OutboundURL, Secret: []byte(secret),
				MaxAttempts: wc.MaxAttempts, Clock: a.Clock, Log: a.Log.With("channel", "webhook")})
			if err != nil {
				return err
			}
			a.Hub.Register(channels.WebhookChannel, out)
		}
		ln, err := net.Listen("tcp", wc.Listen)
		if err != nil {
			return fmt.Errorf("gateway: webhook listen %s: %w", wc.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle(h.Path(), h)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		a.Go("webhook", func(context.Context) error {
			go func() {
				<-g.inbound.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		a.Log.Info("webhook channel listening", "addr", ln.Addr().String(), "path", h.Path())
	}
	if tc := cc.Telegram; tc.Enabled {
		tg, err := channels.NewTelegram(channels.TelegramOptions{Token: tc.EffectiveToken(os.Getenv), AllowFrom: tc.AllowFrom,
			ServerURL: firstNonEmpty(o.TelegramServerURL, tc.APIURL), Inbound: g.Inbound.Inbound, Clock: a.Clock, Log: a.Log.With("channel", "telegram")})
		if err != nil {
			return err
		}
		a.Hub.Register(channels.TelegramChannel, tg)
		a.Go("telegram", func(context.Context) error { return tg.Run(g.inbound) })
	}
	return nil
}
