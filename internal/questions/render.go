package questions

import (
	"fmt"
	"strings"
	"time"
)

// RenderChannelText renders one question for a chat channel: numbered
// choices, the recommended one marked, and how to answer.
func RenderChannelText(q Question, index, total int, remaining time.Duration) string {
	var b strings.Builder
	if q.Header != "" {
		fmt.Fprintf(&b, "[%s] ", q.Header)
	}
	b.WriteString("Question")
	if total > 1 {
		fmt.Fprintf(&b, " %d of %d", index+1, total)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimSpace(q.Question))
	b.WriteString("\n")
	rec := choiceIndex(q.Choices, q.Recommended)
	for i, c := range q.Choices {
		fmt.Fprintf(&b, "  %d. %s", i+1, strings.TrimSpace(c))
		if i == rec && q.Recommended != "" {
			b.WriteString("  (recommended)")
		}
		b.WriteString("\n")
	}
	if len(q.Choices) > 0 {
		fmt.Fprintf(&b, "Reply with a number (1-%d) or the option's name, or write your own answer.", len(q.Choices))
	} else {
		b.WriteString("Reply with your answer.")
	}
	fmt.Fprintf(&b, " Time left: %s.", humanDuration(remaining))
	return b.String()
}

func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d <= 0:
		return "none"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	default:
		return fmt.Sprintf("%d min %ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}
