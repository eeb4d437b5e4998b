package channels

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels/telegramtest"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
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
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "5", Content: long}); err != nil {
		t.Fatal(err)
	}
	if a, b := f.Next(t), f.Next(t); a.Text != strings.Repeat("a", 4000) || b.Text != strings.Repeat("b", 200) {
		t.Fatalf("split into %d + %d chars", len(a.Text), len(b.Text))
	}
	f.FailParses(1)
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "5", Content: "hi!"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.Text != "hi!" || got.ParseMode != "" {
		t.Fatalf("fallback sent %+v", got)
	}
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "not-a-number", Content: "x"}); err == nil {
		t.Fatal("bad chat id accepted")
	}
}
