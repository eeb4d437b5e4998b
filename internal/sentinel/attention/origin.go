package attention

import (
	"regexp"
	"strings"
)

// Raven writes into the same history and sessions the owner does: cron
// prompts, heartbeat prompts, subagent tasks, proactive notices and the
// replies to them. None of that is something the owner has to do or is
// waiting on, so the producers skip it.

// systemConversations are the conversation-key prefixes of turns Raven
// starts itself (cron:<job>, heartbeat:main, subagent:<id>, sentinel:…).
var systemConversations = []string{"cron:", "heartbeat:", "subagent:", "sentinel:", "system:"}

// systemRoles are the history roles of non-owner input: the agent loop
// writes a proactive turn's prompt under its origin instead of "user".
var systemRoles = map[string]bool{"cron": true, "heartbeat": true, "subagent": true, "sentinel": true, "system": true}

// promptMarkers open the prompts and notices Raven writes.
var promptMarkers = []string{"[Scheduled job ", "[Heartbeat]", "[proactive "}

// historyLineRe captures a memory.AppendHistory line's conversation, role
// and text.
var historyLineRe = regexp.MustCompile(`^\s*[-*]?\s*\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})\s+(?:\[([^\]]*)\]\s+)?(?:([a-z]+):\s+)?(.*)$`)

// systemConversation reports whether key is a conversation Raven runs.
func systemConversation(key string) bool {
	for _, p := range systemConversations {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// ravenPrompt reports whether text is a prompt or notice Raven wrote.
func ravenPrompt(text string) bool {
	text = strings.TrimSpace(text)
	for _, m := range promptMarkers {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	return false
}

// systemHistoryLine reports whether a HISTORY.md line belongs to one of
// Raven's own turns rather than to the owner's conversation.
func systemHistoryLine(line string) bool {
	m := historyLineRe.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	return systemConversation(m[1]) || systemRoles[m[2]] || ravenPrompt(m[3])
}

// systemSession reports whether s is Raven's own conversation, or one
// whose last "user" message is a prompt Raven wrote.
func systemSession(s Session) bool {
	return systemConversation(s.Key) || ravenPrompt(s.LastUser)
}
