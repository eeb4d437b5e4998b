package memory

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/jsonl"
)

// AppendHistory appends one entry to HISTORY.md with the log appender
// (jsonl.AppendLine): one write under O_APPEND, so concurrent writers
// (gateway and chat) never tear each other's lines, and an entry after a
// torn one starts on its own line.
func AppendHistory(path string, at time.Time, conversation, role, text string) error {
	line := fmt.Sprintf("- %s [%s] %s: %s", at.UTC().Format(time.RFC3339), conversation, role, oneLine(text, 2000))
	if err := jsonl.AppendLine(path, []byte(line)); err != nil {
		return fmt.Errorf("memory: history: %w", err)
	}
	return nil
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
