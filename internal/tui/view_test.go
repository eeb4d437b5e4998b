package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/questions"
)

// BenchmarkView measures one frame of a full TUI: the program renders
// after every message, keystrokes included, so this is the hot path.
func BenchmarkView(b *testing.B) {
	m := New(Options{Conversation: "tui:main", Dial: nil})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 35})
	for i := range maxMessages {
		m.addMessage("raven", fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 20)))
	}
	for i := range maxEvents {
		m.addEvent(fmt.Sprintf("09:00:%02d #%d turn.finished tui:main", i%60, i))
	}
	m.clarify = newClarify(questions.ClarifyRequest{Question: "Which environment?", Choices: []string{"staging", "production"},
		Recommended: "staging", TimeoutS: 600, Total: 1, Batch: "b"}, m.o.Clock.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_ = m.View()
	}
}

func TestViewShowsNewestMessagesInFixedHeight(t *testing.T) {
	tests := []struct {
		name     string
		messages int
		long     bool
	}{
		{"empty", 0, false},
		{"fits", 3, false},
		{"overflows", 40, false},
		{"wrapped rows overflow", 40, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{Conversation: "tui:main"})
			m.Update(tea.WindowSizeMsg{Width: 40, Height: 20})
			for i := range tt.messages {
				text := fmt.Sprintf("m%02d", i)
				if tt.long {
					text += " " + strings.Repeat("word ", 15)
				}
				m.addMessage("raven", text)
			}
			v := m.View().Content
			if rows := strings.Count(v, "\n") + 1; rows != 20 {
				t.Fatalf("%d rows, want the window's 20:\n%s", rows, v)
			}
			if tt.messages == 0 {
				return
			}
			if last := fmt.Sprintf("m%02d", tt.messages-1); !strings.Contains(v, last) {
				t.Fatalf("newest message %s not shown:\n%s", last, v)
			}
			if tt.messages > 20 && strings.Contains(v, "m00") {
				t.Fatalf("oldest message shown although it cannot fit:\n%s", v)
			}
		})
	}
}
