package sentinel

import (
	"context"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// SessionLister lists owner conversations active since a time, most recent
// first. session.Store.Active has exactly this shape.
type SessionLister func(ctx context.Context, since time.Time) ([]session.Summary, error)

// summaryKey is the key the agent loop gives the response modifier and the
// tool context: the conversation ID, which defaults to "channel:chat_id".
func summaryKey(s session.Summary) string {
	if s.Conversation != "" {
		return s.Conversation
	}
	return spine.ConversationKey(s.Channel, s.ChatID)
}

// ActiveSessions adapts list to the assembler's session source.
func ActiveSessions(list SessionLister) func(ctx context.Context, since time.Time) ([]ActiveSession, error) {
	if list == nil {
		return nil
	}
	return func(ctx context.Context, since time.Time) ([]ActiveSession, error) {
		ss, err := list(ctx, since)
		if err != nil {
			return nil, err
		}
		out := make([]ActiveSession, 0, len(ss))
		for _, s := range ss {
			out = append(out, ActiveSession{Key: summaryKey(s), LastActive: s.LastActivity, LastUser: s.LastUser, LastUserAt: s.LastUserAt, LastAssistant: s.LastAssistant})
		}
		return out, nil
	}
}

// attentionSessions adapts list to the attention producers' input.
func attentionSessions(list SessionLister) func(ctx context.Context, since time.Time) ([]attention.Session, error) {
	if list == nil {
		return nil
	}
	return func(ctx context.Context, since time.Time) ([]attention.Session, error) {
		ss, err := list(ctx, since)
		if err != nil {
			return nil, err
		}
		out := make([]attention.Session, 0, len(ss))
		for _, s := range ss {
			out = append(out, attention.Session{Key: summaryKey(s), LastActive: s.LastActivity, LastUser: s.LastUser, LastUserAt: s.LastUserAt, LastAssistant: s.LastAssistant})
		}
		return out, nil
	}
}
