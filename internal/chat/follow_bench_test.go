package chat

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/spine"
)

// BenchmarkFollowDeliver measures one gateway push to the terminal: a
// chat.message notification over the unix socket, decoded, filtered and
// handed to the outlet.
func BenchmarkFollowDeliver(b *testing.B) {
	g := newFakeGateway(b)
	g.start()
	got := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, FollowOptions{
			Conversation: "cli:direct",
			Deliver: func(context.Context, spine.Message) error {
				got <- struct{}{}
				return nil
			},
			Dial: func(ctx context.Context) (*controlapi.Client, error) { return DialGateway(ctx, g.socket, g.token) },
		})
	}()
	select {
	case <-g.attachCh:
	case <-time.After(10 * time.Second):
		b.Fatal("no attach")
	}
	m := channels.ChatMessage{Conversation: "cli:direct", Content: "Stand up and stretch.", Origin: "cron", Proactive: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if g.push(api.NotifyChatMessage.Name(), m, "cli:direct") != 1 {
			b.Fatal("push reached no connection")
		}
		<-got
	}
	b.StopTimer()
	cancel()
	<-done
}
