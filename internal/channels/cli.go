package channels

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/raven-agent/raven/internal/spine"
)

// ProactiveMarker prefixes a message Raven sent on its own on the
// interactive surfaces, so the owner can tell it from a reply to what they
// just typed. Real channels deliver the content verbatim instead.
const ProactiveMarker = "⚑ [raven, unprompted] "

// CLI is the outlet of the interactive terminal: it writes each message as
// one block to w. Safe for concurrent use.
type CLI struct {
	mu   sync.Mutex
	w    io.Writer
	o    CLIStream
	st   cliStreamState
	werr error
}

// NewCLI returns a CLI outlet writing to w.
func NewCLI(w io.Writer) *CLI { return &CLI{w: w} }

// Deliver writes m, marking proactive messages.
func (c *CLI) Deliver(_ context.Context, m spine.Message) error {
	text := FormatInteractive(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Reply && !m.Proactive {
		return c.finish(text)
	}
	c.endLine()
	if _, err := io.WriteString(c.w, text+"\n"); err != nil {
		return fmt.Errorf("channels: cli write: %w", err)
	}
	return nil
}

// FormatInteractive renders m for an interactive surface: proactive
// messages get the marker on their first line, replies stay plain.
func FormatInteractive(m spine.Message) string {
	text := strings.TrimRight(m.Content, "\n")
	if m.Proactive {
		return ProactiveMarker + text
	}
	return text
}
