package session

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func open(t *testing.T) *Store {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRecentAndActivity(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	e := func(conv, ch, chat string, role llm.Role, content string, at time.Time) Entry {
		return Entry{Message: llm.Message{Role: role, Content: content}, Conversation: conv, Channel: ch, ChatID: chat, Origin: "user", At: at}
	}
	cronTurn := func(conv, ch, chat string, at time.Time) Entry {
		return Entry{Message: llm.Message{Role: llm.RoleUser, Content: "[Scheduled job] reminder"}, Conversation: conv, Channel: ch, ChatID: chat, Origin: "cron", At: at}
	}
	call := Entry{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"a"}`}}},
		Conversation: "cli:direct", Channel: "cli", ChatID: "direct", At: t0.Add(time.Second)}
	res := Entry{Message: llm.Message{Role: llm.RoleTool, Content: "data", ToolCallID: "1", Name: "read_file"},
		Conversation: "cli:direct", Channel: "cli", ChatID: "direct", At: t0.Add(2 * time.Second)}
	if err := s.Append(ctx,
		e("cli:direct", "cli", "direct", llm.RoleUser, "hello", t0),
		call, res,
		e("cli:direct", "cli", "direct", llm.RoleAssistant, "hi!", t0.Add(3*time.Second)),
		e("telegram:7", "telegram", "7", llm.RoleUser, "old", t0.Add(-48*time.Hour)),
		e("telegram:9", "telegram", "9", llm.RoleUser, "newer", t0.Add(-time.Hour)),
		cronTurn("cron:j1", "cron", "j1", t0),
		// A cron turn delivering to telegram is not an owner conversation,
		// and its chat must not become "the latest telegram chat".
		cronTurn("cron:j2", "telegram", "555", t0.Add(time.Minute)),
	); err != nil {
		t.Fatal(err)
	}
	all, err := s.Recent(ctx, "cli:direct", 10)
	if err != nil || len(all) != 4 || all[1].ToolCalls[0].Name != "read_file" || all[2].ToolCallID != "1" {
		t.Fatalf("recent = %+v, %v", all, err)
	}
	// A window that would start at the tool result is trimmed to a clean start.
	two, _ := s.Recent(ctx, "cli:direct", 2)
	if len(two) != 1 || two[0].Content != "hi!" {
		t.Fatalf("recent(2) = %+v, want only the final reply", two)
	}
	act, err := s.Active(ctx, t0.Add(-2*time.Hour))
	if err != nil || len(act) != 2 || act[0].Conversation != "cli:direct" || act[0].LastUser != "hello" || act[0].LastAssistant != "hi!" {
		t.Fatalf("active = %+v, %v (cron must be excluded, old telegram too)", act, err)
	}
	if id, ok := s.LastChatID(ctx, "telegram"); !ok || id != "9" {
		t.Fatalf("LastChatID = %q %v, want 9", id, ok)
	}
	if at, ok := s.LastActivity(ctx, "cli:direct"); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("LastActivity = %v %v", at, ok)
	}
	if _, ok := s.LastActivity(ctx, "nope"); ok {
		t.Fatal("LastActivity of unknown conversation reported ok")
	}
}
