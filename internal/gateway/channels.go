package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/raven-agent/raven/internal/channels"
)

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func (g *Gateway) startChannels(o DaemonOptions) error {
	rt := g.rt
	cc := rt.Config().Channels
	clk, log, hub, inbound := rt.Clock(), rt.Logger(), rt.Hub(), rt.Inbound().Inbound
	if wc := cc.Webhook; wc.Enabled {
		secret := wc.EffectiveSecret(os.Getenv)
		seen := rt.Paths().WebhookSeen(wc.Name)
		if err := os.MkdirAll(filepath.Dir(seen), 0o700); err != nil {
			return fmt.Errorf("gateway: webhook replay state: %w", err)
		}
		h, err := channels.NewWebhookHandler(channels.WebhookHandlerOptions{Name: wc.Name, Secret: []byte(secret),
			Window: wc.Window.D(), MaxBody: wc.MaxBody, SeenStatePath: seen,
			Inbound: inbound, Clock: clk, Log: log.With("channel", "webhook")})
		if err != nil {
			return err
		}
		rt.AddCloser(func(context.Context) error { return h.Close() })
		if rec := h.StateRecovery(); rec != "" {
			log.Error("webhook replay state recovered: requests signed before now are refused until the window passes",
				"channel", "webhook", "detail", rec)
		}
		if wc.OutboundURL != "" {
			out, err := channels.NewWebhookOutlet(channels.WebhookOutletOptions{URL: wc.OutboundURL, Secret: []byte(secret),
				MaxAttempts: wc.MaxAttempts, Clock: clk, Log: log.With("channel", "webhook")})
			if err != nil {
				return err
			}
			hub.Register(channels.WebhookChannel, out)
		}
		ln, err := net.Listen("tcp", wc.Listen)
		if err != nil {
			return fmt.Errorf("gateway: webhook listen %s: %w", wc.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle(h.Path(), h)
		srv := channels.NewWebhookServer(mux, channels.WebhookServerOptions{Log: log.With("channel", "webhook")})
		rt.Go("webhook", func(context.Context) error {
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
		log.Info("webhook channel listening", "addr", ln.Addr().String(), "path", h.Path())
	}
	if tc := cc.Telegram; tc.Enabled {
		tg, err := channels.NewTelegram(channels.TelegramOptions{Token: tc.EffectiveToken(os.Getenv), AllowFrom: tc.AllowFrom, AllowChats: tc.AllowChats,
			ServerURL: firstNonEmpty(o.TelegramServerURL, tc.APIURL), Inbound: inbound, Clock: clk, Log: log.With("channel", "telegram"),
			Stream: tc.Stream, StreamInterval: tc.StreamInterval.D()})
		if err != nil {
			return err
		}
		hub.Register(channels.TelegramChannel, tg)
		rt.Go("telegram", func(context.Context) error { return tg.Run(g.inbound) })
	}
	return nil
}
