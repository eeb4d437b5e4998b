package gateway

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/channels/telegramtest"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/runtime"
)

// An in-process gateway with every channel on, the control API served and a
// turn run end to end leaves no goroutine behind once Shutdown returns.
func TestStartShutdownLeavesNoGoroutine(t *testing.T) {
	// Registered first so it runs last, after the fakes' cleanups closed them.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bot := telegramtest.New(t)
	recv, got := webhookReceiver(t)
	cfg := config.Default()
	cfg.Channels.Webhook.Enabled = true
	cfg.Channels.Webhook.Listen = "127.0.0.1:0"
	cfg.Channels.Webhook.Secret = "s3cret"
	cfg.Channels.Webhook.OutboundURL = recv.URL
	cfg.Channels.Telegram.Enabled = true
	cfg.Channels.Telegram.Token = telegramtest.Token
	cfg.Channels.Telegram.AllowFrom = []int64{42}
	cfg.Channels.Telegram.APIURL = bot.URL
	cfg.Heartbeat.Enabled = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	g, err := Start(ctx, DaemonOptions{Runtime: runtime.Options{Paths: p, Config: cfg,
		Provider: llm.NewScripted([]llm.Turn{{Content: "tui reply"}, {Content: "telegram reply"}})}})
	if err != nil {
		t.Fatal(err)
	}
	shut := false
	defer func() {
		if !shut {
			g.Shutdown(ctx)
		}
	}()
	sock := filepath.Join(p.Root, "t.sock")
	ln, err := controlapi.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- g.Control().Serve(serveCtx, ln) }()

	c := dialToken(t, sock, operatorToken(t, p.Root))
	call(t, c, api.ChatAttach, api.ChatAttachParams{Conversation: "tui:main"})
	call(t, c, api.ChatSend, api.ChatSendParams{Conversation: "tui:main", Text: "hi"})
	if m := nextChatMessage(t, c); m.Content != "tui reply" {
		t.Fatalf("chat.message %+v", m)
	}
	bot.Push(42, 42, "hello")
	if s := bot.NextReply(t); s.Text != "telegram reply" {
		t.Fatalf("telegram send %+v", s)
	}
	c.Close()

	stopServe()
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) {
		t.Errorf("Serve: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shut = true
	if err := g.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case d := <-got:
		t.Errorf("unexpected webhook delivery %s", d.body)
	default:
	}
}

// The gateway serves every method of the contract, each decoding its
// declared request strictly: a probe with an unknown field is refused as
// invalid params, never "method not found".
func TestGatewayServesTheContract(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := Start(ctx, DaemonOptions{Runtime: runtime.Options{Paths: p, Config: config.Default()}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown(ctx)
	sock := filepath.Join(p.Root, "t.sock")
	ln, err := controlapi.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	go g.Control().Serve(serveCtx, ln)
	c := dialToken(t, sock, operatorToken(t, p.Root))
	defer c.Close()
	for _, name := range []string{api.Ping.Name(), api.Whoami.Name(), api.GatewayStatus.Name(), api.EventsTail.Name(),
		api.EventsSubscribe.Name(), api.EventsUnsubscribe.Name(), api.ControlTake.Name(), api.ControlRelease.Name(),
		api.ControlGet.Name(), api.ChatSend.Name(), api.ChatAttach.Name(), api.ClarifyRespond.Name(),
		api.InputGet.Name(), api.InputAnswer.Name(), api.InputCancel.Name(),
		api.ConversationsList.Name(), api.ConversationsShow.Name(), api.ConversationsOpen.Name(), api.ConversationsNew.Name(),
		api.ConversationsReset.Name(), api.ConversationsTake.Name(), api.ConversationsRelease.Name(), api.ConversationsNative.Name()} {
		err := c.Call(ctx, name, map[string]int{"not_in_the_contract": 1}, nil)
		if !controlapi.IsCode(err, controlapi.CodeInvalidParams) {
			t.Errorf("%s with an unknown field: %v, want invalid params", name, err)
		}
	}
	if st := call(t, c, api.GatewayStatus, api.Empty{}); st.Gateway == nil || st.Gateway.DataDir != p.Root {
		t.Fatalf("gateway.status has no gateway part: %+v", st)
	}
}
