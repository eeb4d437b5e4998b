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

func streamingTelegram(t *testing.T, f *telegramtest.Server, stream bool, clk clock.Clock) *Telegram {
	t.Helper()
	tg, err := NewTelegram(TelegramOptions{
		Token: telegramtest.Token, AllowFrom: []int64{7}, ServerURL: f.URL, PollTimeout: 2 * time.Second,
		Inbound: func(context.Context, spine.TurnRequest) error { return nil }, Clock: clk, Stream: stream,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// A streamed reply is sent at its first words, then edited at most once
// per interval (on the fake clock) whatever the number of deltas, and the
// reply's Deliver makes the final edit, formatted, instead of a second
// message.
func TestTelegramStreamEditRate(t *testing.T) {
	f := telegramtest.New(t)
	clk := clock.NewFake(epoch)
	tg := streamingTelegram(t, f, true, clk)
	ctx := context.Background()
	delta := func(s string) { tg.Stream(ctx, spine.Delta{Channel: TelegramChannel, ChatID: "7", Text: s}) }

	delta("Hello ")
	if got := f.Next(t); got.Edit || got.Text != "Hello " || got.ParseMode != "" || got.ChatID != 7 {
		t.Fatalf("first send %+v", got)
	}
	delta("world. ")
	delta("More ")
	clk.BlockUntil(1) // the worker waits out the interval
	clk.Advance(DefaultTelegramStreamInterval - time.Millisecond)
	f.None(t)
	clk.Advance(time.Millisecond)
	if got := f.Next(t); !got.Edit || got.MessageID != 1 || got.Text != "Hello world. More " {
		t.Fatalf("edit %+v", got)
	}
	delta("text")
	clk.BlockUntil(1)
	f.None(t)
	if err := tg.Deliver(ctx, spine.Message{Channel: TelegramChannel, ChatID: "7", Content: "Hello world. More text!", Reply: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); !got.Edit || got.MessageID != 1 || got.Text != `Hello world\. More text\!` || got.ParseMode != "MarkdownV2" {
		t.Fatalf("final edit %+v", got)
	}
	f.None(t)

	// The next reply streams into a new message.
	delta("Again")
	if got := f.Next(t); got.Edit || got.MessageID != 2 {
		t.Fatalf("second reply's send %+v", got)
	}
	long := strings.Repeat("x", TelegramLimit+10)
	if err := tg.Deliver(ctx, spine.Message{Channel: TelegramChannel, ChatID: "7", Content: long, Reply: true}); err != nil {
		t.Fatal(err)
	}
	if first, rest := f.Next(t), f.Next(t); !first.Edit || first.MessageID != 2 || rest.Edit || len(first.Text)+len(rest.Text) != len(long) {
		t.Fatalf("long final reply: edit %d bytes %+v, then %d bytes edit=%v", len(first.Text), first.Edit, len(rest.Text), rest.Edit)
	}
}

// With streaming off (channels.telegram.stream false) deltas send nothing
// and the reply goes out once, whole.
func TestTelegramStreamOff(t *testing.T) {
	f := telegramtest.New(t)
	tg := streamingTelegram(t, f, false, clock.NewFake(epoch))
	ctx := context.Background()
	tg.Stream(ctx, spine.Delta{Channel: TelegramChannel, ChatID: "7", Text: "Hello "})
	if err := tg.Deliver(ctx, spine.Message{Channel: TelegramChannel, ChatID: "7", Content: "Hello world", Reply: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Next(t); got.Edit || got.Text != "Hello world" {
		t.Fatalf("sent %+v", got)
	}
	f.None(t)
}

// A turn that ends without a reply ends its stream worker with it.
func TestTelegramStreamEndsWithTurn(t *testing.T) {
	f := telegramtest.New(t)
	tg := streamingTelegram(t, f, true, clock.NewFake(epoch))
	ctx, cancel := context.WithCancel(context.Background())
	tg.Stream(ctx, spine.Delta{Channel: TelegramChannel, ChatID: "7", Text: "Half"})
	f.Next(t)
	tg.mu.Lock()
	lr := tg.live[7]
	tg.mu.Unlock()
	cancel()
	select {
	case <-lr.done:
	case <-time.After(10 * time.Second):
		t.Fatal("stream worker still running after its turn ended")
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if len(tg.live) != 0 {
		t.Fatal("ended stream still registered")
	}
}

// Which outlets stream: the terminal and Telegram do; the webhook posts
// each reply whole, once, so its receiver never sees half a reply.
func TestWhichOutletsStream(t *testing.T) {
	for _, c := range []struct {
		name string
		o    spine.Outlet
		want bool
	}{
		{"cli", NewCLI(nil), true},
		{"telegram", &Telegram{}, true},
		{"webhook", &WebhookOutlet{}, false},
	} {
		if _, got := c.o.(spine.Streamer); got != c.want {
			t.Errorf("%s streams = %v, want %v", c.name, got, c.want)
		}
	}
}
