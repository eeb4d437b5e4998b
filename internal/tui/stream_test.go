package tui

import (
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// chat.delta notifications grow a partial reply in the message list (with
// a cursor), a tool call gets its own line, and the final chat.message
// replaces the partial reply instead of adding a second copy.
func TestStreamedReplyReplacedByFinal(t *testing.T) {
	h := newHarness(t)
	h.connected()
	c := h.client(0)
	delta := func(d api.ChatDelta) { c.notify(t, api.NotifyChatDelta.Name(), d) }
	delta(api.ChatDelta{Conversation: "tui:main", Text: "Let me "})
	delta(api.ChatDelta{Conversation: "tui:main", Text: "check."})
	delta(api.ChatDelta{Conversation: "tui:main", Tool: &api.ToolNote{Name: "web_fetch", Arguments: `{"url":"http://x.test"}`}})
	delta(api.ChatDelta{Conversation: "tui:main", Text: "It is "})
	delta(api.ChatDelta{Conversation: "telegram:1", Text: "not for this view"})
	h.until("partial reply shown", func() bool { return strings.Contains(h.view(), "raven › It is ▍") })
	v := h.view()
	for _, want := range []string{"raven › Let me check.\n", "  · web_fetch {\"url\":\"http://x.test\"}"} {
		if !strings.Contains(v, want) {
			t.Fatalf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "not for this view") || strings.Contains(v, "bad notification") {
		t.Fatalf("view:\n%s", v)
	}
	c.notify(t, api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "It is sunny.", Reply: true})
	h.until("final reply shown", func() bool { return strings.Contains(h.view(), "raven › It is sunny.") })
	v = h.view()
	if strings.Contains(v, "▍") || strings.Count(v, "It is") != 1 {
		t.Fatalf("partial reply not replaced:\n%s", v)
	}
	// The next streamed reply starts a new line.
	delta(api.ChatDelta{Conversation: "tui:main", Text: "Next"})
	h.until("second partial", func() bool { return strings.Contains(h.view(), "raven › Next▍") })
	if !strings.Contains(h.view(), "raven › It is sunny.") {
		t.Fatalf("final reply overwritten:\n%s", h.view())
	}
}
