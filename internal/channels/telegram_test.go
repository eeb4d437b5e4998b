package channels

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels/telegramtest"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// runTelegram starts the channel against the fake; the returned stop ends
// it and waits for Run to return.
func runTelegram(t *testing.T, f *telegramtest.Server, inbound Inbound) (*Telegram, func()) {
	t.Helper()
	tg, err := NewTelegram(TelegramOptions{
		Token: telegramtest.Token, AllowFrom: []int64{7}, ServerURL: f.URL,
		PollTimeout: 2 * time.Second, Inbound: inbound, Clock: clock.NewFake(epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tg.Run(ctx)
	}()
	return tg, func() { cancel(); <-done }
}

// TestTelegramRoundTrip: an update from the owner reaches the dispatcher,
// the turn runs on the real scheduler, and the reply goes back through the
// hub to sendMessage with the right chat id.
func TestTelegramRoundTrip(t *testing.T) {
	f := telegramtest.New(t)
	hub := spine.NewHub(nil)
	sched := spine.NewScheduler(func(_ context.Context, turn *spine.Turn) (string, error) {
		return "echo: " + turn.Request.Content + "!", nil
	}, hub, spine.Options{})
	defer sched.Shutdown(context.Background())
	d, err := NewDispatcher(DispatcherDeps{HasInflight: sched.HasInflight, Submit: sched.Submit, Post: hub.Post})
	if err != nil {
		t.Fatal(err)
	}
	tg, stop := runTelegram(t, f, d.Inbound)
	defer stop()
	hub.Register(TelegramChannel, tg)

	f.Push(7, 9001, "hi there")
	got := f.Next(t)
	if got.ChatID != 9001 || got.Text != `echo: hi there\!` || got.ParseMode != "MarkdownV2" {
		t.Fatalf("sent %+v", got)
	}

	// A proactive message goes out verbatim: no marker on a real channel.
	if err := hub.Post(context.Background(), spine.Message{Channel: TelegramChannel, ChatID: "9001", Content: "Stand up.", Proactive: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.Text != `Stand up\.` || strings.Contains(got.Text, ProactiveMarker) {
		t.Fatalf("proactive sent %+v", got)
	}
}

func TestTelegramAllowList(t *testing.T) {
	f := telegramtest.New(t)
	reqs := make(chan spine.TurnRequest, 4)
	_, stop := runTelegram(t, f, func(_ context.Context, r spine.TurnRequest) error { reqs <- r; return nil })
	f.Push(666, 500, "let me in")
	if got := f.Next(t); got.ChatID != 500 || got.Text != TelegramRefusal {
		t.Fatalf("refusal %+v", got)
	}
	f.Push(666, 500, "please")
	f.Push(7, 501, "owner here")
	// Updates are handled in order on one worker: once the owner's message
	// arrives, the stranger's second one has been handled (silently).
	var r spine.TurnRequest
	select {
	case r = <-reqs:
	case <-time.After(10 * time.Second):
		t.Fatal("owner message never reached inbound")
	}
	stop()
	f.None(t)
	if r.Channel != TelegramChannel || r.ChatID != "501" || r.Content != "owner here" || r.Origin != spine.OriginUser {
		t.Fatalf("inbound %+v", r)
	}
	if len(reqs) != 0 {
		t.Fatalf("a stranger's message reached inbound: %+v", <-reqs)
	}
}

func TestTelegramDeliverSplitsAndFallsBack(t *testing.T) {
	f := telegramtest.New(t)
	tg, stop := runTelegram(t, f, (&recordInbound{}).inbound)
	defer stop()
	long := strings.Repeat("a", 4000) + "\n\n" + strings.Repeat("b", 200)
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "7", Content: long}); err != nil {
		t.Fatal(err)
	}
	if a, b := f.Next(t), f.Next(t); a.Text != strings.Repeat("a", 4000) || b.Text != strings.Repeat("b", 200) {
		t.Fatalf("split into %d + %d chars", len(a.Text), len(b.Text))
	}
	f.FailParses(1)
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "7", Content: "hi!"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.Text != "hi!" || got.ParseMode != "" {
		t.Fatalf("fallback sent %+v", got)
	}
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "not-a-number", Content: "x"}); err == nil {
		t.Fatal("bad chat id accepted")
	}
}

// TestTelegramOutboundAllowList: the allow-list holds for what Raven sends
// too. The message tool and a device's chat.send both end in Hub.Post; to a
// chat that is neither an allowed user's private chat, nor configured, nor
// one an allowed user has written from, nothing reaches the Bot API.
func TestTelegramOutboundAllowList(t *testing.T) {
	f := telegramtest.New(t)
	hub := spine.NewHub(nil)
	reqs := make(chan spine.TurnRequest, 4)
	tg, stop := runTelegram(t, f, func(_ context.Context, r spine.TurnRequest) error { reqs <- r; return nil })
	defer stop()
	hub.Register(TelegramChannel, tg)
	ctx := context.Background()
	msgTool := tools.NewMessage(hub.Post)
	send := func(chat string) error {
		_, err := msgTool.Run(ctx, json.RawMessage(`{"content":"psst","channel":"telegram","chat_id":"`+chat+`"}`))
		return err
	}
	for _, chat := range []string{"666", "9001", "-100123", "0"} {
		if err := send(chat); !errors.Is(err, ErrChatNotAllowed) {
			t.Errorf("message tool to %s: err = %v, want ErrChatNotAllowed", chat, err)
		}
		// chat.send goes through the same Hub.Post.
		if err := hub.Post(ctx, spine.Message{Channel: TelegramChannel, ChatID: chat, Content: "x", Origin: spine.OriginUser}); !errors.Is(err, ErrChatNotAllowed) {
			t.Errorf("post to %s: err = %v, want ErrChatNotAllowed", chat, err)
		}
	}
	f.None(t)
	// The owner's private chat (chat id = user id) is allowed.
	if err := send("7"); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.ChatID != 7 {
		t.Fatalf("sent %+v", got)
	}
	// A group the owner writes from becomes reachable; a stranger writing
	// from another group does not make it so.
	f.Push(7, 9001, "hello from the group")
	f.Push(666, 9002, "me too")
	<-reqs
	if f.Next(t).Text != TelegramRefusal {
		t.Fatal("no refusal to the stranger")
	}
	if err := send("9001"); err != nil {
		t.Fatalf("group the owner wrote from: %v", err)
	}
	if got := f.Next(t); got.ChatID != 9001 {
		t.Fatalf("sent %+v", got)
	}
	if err := send("9002"); !errors.Is(err, ErrChatNotAllowed) {
		t.Fatalf("stranger's group: %v", err)
	}
	f.None(t)
}

func TestTelegramAllowChats(t *testing.T) {
	f := telegramtest.New(t)
	tg, err := NewTelegram(TelegramOptions{Token: telegramtest.Token, AllowFrom: []int64{7}, AllowChats: []int64{-100555},
		ServerURL: f.URL, SkipGetMe: true, Inbound: (&recordInbound{}).inbound, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "-100555", Content: "to the family group"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.ChatID != -100555 {
		t.Fatalf("sent %+v", got)
	}
}
