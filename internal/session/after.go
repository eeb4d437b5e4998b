package session

import (
	"context"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

// Record is a stored message with its row id, for readers that page through
// every conversation by id and keep their place (the memory index).
type Record struct {
	ID int64
	Entry
}

// After returns up to limit text messages (user and assistant, non-empty)
// with an id above id, in id order, from every channel.
func (s *Store) After(ctx context.Context, id int64, limit int) ([]Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, conversation, channel, chat_id, role, content, origin, created_at FROM session_messages
		WHERE id > ? AND role IN ('user', 'assistant') AND content != '' ORDER BY id LIMIT ?`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("session: after %d: %w", id, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var role string
		var at int64
		if err := rows.Scan(&r.ID, &r.Conversation, &r.Channel, &r.ChatID, &role, &r.Content, &r.Origin, &at); err != nil {
			return nil, fmt.Errorf("session: after %d: %w", id, err)
		}
		r.Role, r.At = llm.Role(role), time.Unix(0, at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session: after %d: %w", id, err)
	}
	return out, nil
}
