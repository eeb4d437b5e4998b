package session

import (
	"context"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

// Since returns up to limit text messages (user and assistant, non-empty)
// written after t, oldest first, across the owner's conversations — the
// proactive services' internal channels are left out. It is how background
// readers (the behaviors extractor) page through new conversation.
func (s *Store) Since(ctx context.Context, t time.Time, limit int) ([]Entry, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT conversation, channel, chat_id, role, content, origin, created_at FROM session_messages
		WHERE created_at > ? AND role IN ('user', 'assistant') AND content != ''
		  AND channel NOT IN ('cron', 'heartbeat', 'sentinel', 'subagent')
		ORDER BY created_at, id LIMIT ?`, t.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("session: since %s: %w", t.Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var role string
		var at int64
		if err := rows.Scan(&e.Conversation, &e.Channel, &e.ChatID, &role, &e.Content, &e.Origin, &at); err != nil {
			return nil, fmt.Errorf("session: since: %w", err)
		}
		e.Role, e.At = llm.Role(role), time.Unix(0, at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session: since: %w", err)
	}
	return out, nil
}
