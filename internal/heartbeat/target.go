package heartbeat

import (
	"strings"

	"github.com/raven-agent/raven/internal/spine"
)

// Target is one place a heartbeat reply is delivered.
type Target struct {
	Channel string `json:"channel"`
	ChatID  string `json:"chat_id"`
}

// ResolveTargets turns the configured channel and chat id into delivery
// targets at fire time, the way cron does: a real channel passes through; an
// empty or ephemeral one (cli, tui) expands to the forward channels
// ("telegram:12345" or just "telegram"), falling back to the ephemeral
// channel itself when none are configured. A missing chat id is looked up
// with lastChat (the chat of the channel's most recent session; nil: none),
// and a target whose chat id stays unknown is dropped.
func ResolveTargets(channel, chatID string, forward []string, lastChat func(channel string) string) []Target {
	fill := func(t Target) (Target, bool) {
		if t.ChatID == "" && lastChat != nil {
			t.ChatID = lastChat(t.Channel)
		}
		return t, t.Channel != "" && t.ChatID != ""
	}
	if channel != "" && !spine.IsEphemeral(channel) {
		if t, ok := fill(Target{Channel: channel, ChatID: chatID}); ok {
			return []Target{t}
		}
		return nil
	}
	var out []Target
	seen := map[Target]bool{}
	for _, f := range forward {
		ch, id, _ := strings.Cut(strings.TrimSpace(f), ":")
		if ch == "" || spine.IsEphemeral(ch) {
			continue
		}
		if t, ok := fill(Target{Channel: ch, ChatID: id}); ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 && channel != "" {
		// An attached terminal ignores the chat id; keep one so the lane key is valid.
		if chatID == "" {
			chatID = "direct"
		}
		out = append(out, Target{Channel: channel, ChatID: chatID})
	}
	return out
}
