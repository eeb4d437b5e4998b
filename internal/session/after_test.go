package session

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

// After pages by id through every channel's text messages, skipping tool
// traffic and empty messages, and resumes where the reader left off.
func TestAfter(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	e := func(ch string, role llm.Role, content string) Entry {
		return Entry{Message: llm.Message{Role: role, Content: content}, Conversation: ch + ":1", Channel: ch, ChatID: "1", Origin: "user", At: t0}
	}
	if err := s.Append(ctx, e("cli", llm.RoleUser, "a"), e("cli", llm.RoleAssistant, ""), e("cli", llm.RoleTool, "data"),
		e("cron", llm.RoleUser, "b"), e("telegram", llm.RoleAssistant, "c")); err != nil {
		t.Fatal(err)
	}
	first, err := s.After(ctx, 0, 2)
	if err != nil || len(first) != 2 || first[0].Content != "a" || first[1].Content != "b" || first[1].Channel != "cron" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	rest, err := s.After(ctx, first[1].ID, 10)
	if err != nil || len(rest) != 1 || rest[0].Content != "c" || rest[0].ID <= first[1].ID || !rest[0].At.Equal(t0) {
		t.Fatalf("second page: %+v %v", rest, err)
	}
}
