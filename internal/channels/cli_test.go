package channels

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

func TestCLIMarksOnlyProactive(t *testing.T) {
	tests := []struct {
		name string
		msg  spine.Message
		want string
	}{
		{"reply plain", spine.Message{Content: "hello", Reply: true, Origin: spine.OriginUser}, "hello\n"},
		{"proactive marked", spine.Message{Content: "stand up", Proactive: true, Origin: spine.OriginSentinel}, ProactiveMarker + "stand up\n"},
		{"trailing newlines trimmed", spine.Message{Content: "x\n\n"}, "x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := NewCLI(&buf).Deliver(context.Background(), tt.msg); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Fatalf("got %q, want %q", buf.String(), tt.want)
			}
		})
	}
	if !strings.Contains(ProactiveMarker, "unprompted") {
		t.Fatal("marker must say the message was unprompted")
	}
}

func TestTUIOutletPublishesVerbatim(t *testing.T) {
	var got ChatMessage
	o := NewTUI(func(_ context.Context, m ChatMessage) error { got = m; return nil })
	err := o.Deliver(context.Background(), spine.Message{Channel: "tui", ChatID: "main", Content: "ping", Proactive: true, Origin: spine.OriginCron})
	if err != nil {
		t.Fatal(err)
	}
	want := ChatMessage{Conversation: "tui:main", Content: "ping", Origin: "cron", Proactive: true}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
