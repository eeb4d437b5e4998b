package session

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

func TestSince(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	e := func(ch string, role llm.Role, content string, at time.Time) Entry {
		return Entry{Message: llm.Message{Role: role, Content: content}, Conversation: ch + ":1", Channel: ch, ChatID: "1", Origin: "user", At: at}
	}
	tool := Entry{Message: llm.Message{Role: llm.RoleTool, Content: "data", ToolCallID: "x"}, Conversation: "cli:1", Channel: "cli", ChatID: "1", At: t0.Add(3 * time.Second)}
	if err := s.Append(ctx,
		e("cli", llm.RoleUser, "old", t0),
		e("cli", llm.RoleUser, "a", t0.Add(time.Second)),
		e("cli", llm.RoleAssistant, "", t0.Add(2*time.Second)),
		tool,
		e("cron", llm.RoleUser, "cron prompt", t0.Add(4*time.Second)),
		e("telegram", llm.RoleAssistant, "b", t0.Add(5*time.Second)),
		e("cli", llm.RoleUser, "c", t0.Add(6*time.Second)),
	); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		since time.Time
		limit int
		want  []string
	}{
		{t0, 10, []string{"a", "b", "c"}},
		{t0.Add(-time.Hour), 2, []string{"old", "a"}},
		{t0.Add(5 * time.Second), 10, []string{"c"}},
		{t0.Add(time.Hour), 10, nil},
		{t0, 0, nil},
	}
	for _, tc := range tests {
		got, err := s.Since(ctx, tc.since, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var contents []string
		for _, g := range got {
			contents = append(contents, g.Content)
		}
		if len(contents) != len(tc.want) {
			t.Fatalf("Since(%s, %d) = %q, want %q", tc.since.Format(time.TimeOnly), tc.limit, contents, tc.want)
		}
		for i := range contents {
			if contents[i] != tc.want[i] {
				t.Fatalf("Since(%s, %d) = %q, want %q", tc.since.Format(time.TimeOnly), tc.limit, contents, tc.want)
			}
		}
		if len(got) > 0 && (got[0].At.IsZero() || got[0].Conversation == "" || got[0].Role == "") {
			t.Fatalf("metadata missing: %+v", got[0])
		}
	}
}
