package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// AppendHistory appends one entry to HISTORY.md. O_APPEND keeps concurrent
// writers (gateway and chat) from tearing each other's lines.
func AppendHistory(path string, at time.Time, conversation, role, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("memory: history mkdir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("memory: open history: %w", err)
	}
	defer f.Close()
	line := fmt.Sprintf("- %s [%s] %s: %s\n", at.UTC().Format(time.RFC3339), conversation, role, oneLine(text, 2000))
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("memory: append history: %w", err)
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
