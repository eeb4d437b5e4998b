// Package session persists conversation messages in raven.db so that every
// process sharing a data dir sees the same sessions and recent activity.
package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

var migrations = []string{
	`CREATE TABLE session_messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		conversation TEXT NOT NULL,
		channel TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		role TEXT NOT NULL,
		content TEXT NOT NULL,
		tool_calls TEXT,
		tool_call_id TEXT,
		name TEXT,
		origin TEXT NOT NULL DEFAULT 'user',
		created_at INTEGER NOT NULL
	);
	CREATE INDEX session_messages_conv ON session_messages (conversation, id);
	CREATE INDEX session_messages_channel ON session_messages (channel, created_at);`,
}

// Store is the session store.
type Store struct {
	db *sql.DB
}

// Open migrates the session tables in db.
func Open(ctx context.Context, db *sql.DB) (*Store, error) {
	if err := sqlitedb.Migrate(ctx, db, "session", migrations); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Entry is one stored message with its metadata.
type Entry struct {
	llm.Message
	Conversation string
	Channel      string
	ChatID       string
	Origin       string
	At           time.Time
}

// Append stores messages of one conversation in one transaction.
func (s *Store) Append(ctx context.Context, entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("session: append: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO session_messages
		(conversation, channel, chat_id, role, content, tool_calls, tool_call_id, name, origin, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("session: append: %w", err)
	}
	defer stmt.Close()
	for _, e := range entries {
		var calls any
		if len(e.ToolCalls) > 0 {
			b, _ := json.Marshal(e.ToolCalls)
			calls = string(b)
		}
		if _, err := stmt.ExecContext(ctx, e.Conversation, e.Channel, e.ChatID, string(e.Role), e.Content,
			calls, e.ToolCallID, e.Name, e.Origin, e.At.UnixNano()); err != nil {
			return fmt.Errorf("session: append %s: %w", e.Conversation, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("session: append: %w", err)
	}
	return nil
}

// Recent returns the last n messages of conversation, oldest first. It
// never starts with an orphaned tool result, which models reject.
func (s *Store) Recent(ctx context.Context, conversation string, n int) ([]llm.Message, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT role, content, tool_calls, tool_call_id, name FROM session_messages
		WHERE conversation = ? ORDER BY id DESC LIMIT ?`, conversation, n)
	if err != nil {
		return nil, fmt.Errorf("session: recent %s: %w", conversation, err)
	}
	defer rows.Close()
	var out []llm.Message
	for rows.Next() {
		var m llm.Message
		var role string
		var calls, callID, name sql.NullString
		if err := rows.Scan(&role, &m.Content, &calls, &callID, &name); err != nil {
			return nil, fmt.Errorf("session: recent %s: %w", conversation, err)
		}
		m.Role = llm.Role(role)
		m.ToolCallID, m.Name = callID.String, name.String
		if calls.Valid && calls.String != "" {
			if err := json.Unmarshal([]byte(calls.String), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("session: recent %s: decode tool calls: %w", conversation, err)
			}
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session: recent %s: %w", conversation, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	for len(out) > 0 && (out[0].Role == llm.RoleTool || (out[0].Role == llm.RoleAssistant && len(out[0].ToolCalls) > 0)) {
		out = out[1:]
	}
	return out, nil
}

// Summary describes a conversation's latest activity.
type Summary struct {
	Conversation  string    `json:"conversation"`
	Channel       string    `json:"channel"`
	ChatID        string    `json:"chat_id"`
	LastUser      string    `json:"last_user,omitempty"`
	LastAssistant string    `json:"last_assistant,omitempty"`
	LastActivity  time.Time `json:"last_activity"`
	LastUserAt    time.Time `json:"last_user_at,omitempty"`
}

// Active lists the owner's conversations with activity since t, most recent
// first. Only turns the owner started count: a cron or heartbeat turn that
// delivers to telegram is not a conversation the owner is having.
func (s *Store) Active(ctx context.Context, since time.Time) ([]Summary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT conversation, channel, chat_id, MAX(created_at) FROM session_messages
		WHERE created_at >= ? AND origin IN ('user', 'answer')
		GROUP BY conversation ORDER BY MAX(created_at) DESC LIMIT 50`, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("session: active: %w", err)
	}
	var out []Summary
	for rows.Next() {
		var sm Summary
		var last int64
		if err := rows.Scan(&sm.Conversation, &sm.Channel, &sm.ChatID, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("session: active: %w", err)
		}
		sm.LastActivity = time.Unix(0, last)
		out = append(out, sm)
	}
	rows.Close()
	for i := range out {
		out[i].LastUser, out[i].LastUserAt = s.last(ctx, out[i].Conversation, "user")
		out[i].LastAssistant, _ = s.last(ctx, out[i].Conversation, "assistant")
	}
	return out, nil
}

func (s *Store) last(ctx context.Context, conv, role string) (string, time.Time) {
	var content string
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT content, created_at FROM session_messages
		WHERE conversation = ? AND role = ? AND content != '' ORDER BY id DESC LIMIT 1`, conv, role).Scan(&content, &at)
	if err != nil {
		return "", time.Time{}
	}
	return content, time.Unix(0, at)
}

// LastActivity returns the time of conversation's latest message.
func (s *Store) LastActivity(ctx context.Context, conversation string) (time.Time, bool) {
	var at sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(created_at) FROM session_messages WHERE conversation = ?`, conversation).Scan(&at); err != nil || !at.Valid {
		return time.Time{}, false
	}
	return time.Unix(0, at.Int64), true
}

// LastUserMessageAt returns when the owner last wrote in conversation.
func (s *Store) LastUserMessageAt(ctx context.Context, conversation string) (time.Time, bool) {
	_, at := s.last(ctx, conversation, "user")
	return at, !at.IsZero()
}

// LastChatID returns the chat id of channel's most recently active session,
// which is where a proactive message for that channel goes.
func (s *Store) LastChatID(ctx context.Context, channel string) (string, bool) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT chat_id FROM session_messages WHERE channel = ? AND role = 'user'
		AND origin = 'user' ORDER BY created_at DESC LIMIT 1`, channel).Scan(&id)
	if err != nil || strings.TrimSpace(id) == "" {
		return "", false
	}
	return id, true
}
