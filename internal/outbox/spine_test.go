package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

func TestOutletKeepsSpineMessagesAndDrainShowsThem(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{MaxContentBytes: 1000})
	out := Outlet{Store: s}
	msgs := []struct {
		m    spine.Message
		want error
	}{
		{spine.Message{Channel: "cli", ChatID: "direct", Content: "Stand-up in 5", Origin: spine.OriginCron, Proactive: true, Reply: true}, nil},
		{spine.Message{Channel: "tui", Content: "PR approved", Origin: spine.OriginSentinel, Proactive: true, Extras: map[string]any{"nudge_id": "n1"}}, nil},
		{spine.Message{Channel: "cli", Content: "reply to the owner", Origin: spine.OriginUser}, nil},
		{spine.Message{Channel: "cli", Content: "bad extras", Origin: spine.OriginCron, Extras: map[string]any{"f": func() {}}}, ErrInvalid},
		{spine.Message{Channel: "cli", Content: strings.Repeat("x", 1001), Origin: spine.OriginHeartbeat}, ErrTooLarge},
	}
	for i, c := range msgs {
		if err := out.Deliver(ctx, c.m); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Fatalf("message %d: Deliver = %v, want %v", i, err, c.want)
		}
	}
	var shown []spine.Message
	n, err := s.Drain(ctx, "chat:1", func(_ context.Context, it Item) error {
		shown = append(shown, ToMessage(it))
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	cron, nudge, own := shown[0], shown[1], shown[2]
	if cron.Origin != spine.OriginCron || !cron.Reply || !cron.Proactive || cron.Content != "Stand-up in 5" || cron.Extras[ExtraOutboxID] == "" {
		t.Fatalf("cron message = %+v", cron)
	}
	if nudge.Origin != spine.OriginSentinel || nudge.Reply || nudge.Extras["nudge_id"] != "n1" {
		t.Fatalf("nudge message = %+v", nudge)
	}
	if own.Origin != "" {
		t.Fatalf("a non-proactive origin must come back as a system notice: %+v", own)
	}
}
