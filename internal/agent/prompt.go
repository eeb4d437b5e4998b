package agent

import (
	"fmt"
	"strings"
	"time"
)

// DefaultSystemPrompt is Raven's identity when the config gives none.
const DefaultSystemPrompt = `You are Raven, a personal AI agent running on your owner's own machine.
Be direct and brief. Use tools when they help; never invent tool results.
Files you can touch live in the workspace. MEMORY.md holds what the owner wants you to remember.`

// buildSystem renders the system message: identity, time, memory and the
// recent history tail.
func buildSystem(base string, now time.Time, memoryMD, historyTail string) string {
	var b strings.Builder
	if base == "" {
		base = DefaultSystemPrompt
	}
	b.WriteString(base)
	fmt.Fprintf(&b, "\n\nCurrent time: %s (%s).", now.Format("2006-01-02 15:04 MST"), now.Weekday())
	if s := strings.TrimSpace(memoryMD); s != "" {
		b.WriteString("\n\n# Long-term memory (MEMORY.md)\n")
		b.WriteString(s)
	}
	if s := strings.TrimSpace(historyTail); s != "" {
		b.WriteString("\n\n# Recent history (tail of HISTORY.md)\n")
		b.WriteString(s)
	}
	return b.String()
}
