package channels

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/spine"
)

// BusyIndicator is shown on a terminal between sending a message and the
// reply's first token.
const BusyIndicator = "… "

// ToolLinePrefix starts the line the terminal prints for each tool call.
const ToolLinePrefix = "· "

// maxToolLineArgs bounds the arguments shown on a tool line.
const maxToolLineArgs = 100

// CLIStream says how a CLI shows a streamed reply.
type CLIStream struct {
	// Redraw is set when the writer redraws its prompt line around every
	// write (readline on a terminal). The unfinished line of a reply is
	// then shown on a line of its own above the prompt, and each write
	// erases and repeats it.
	Redraw bool
	// Busy shows BusyIndicator from Begin to the first token: for
	// terminals only, it is noise in a pipe or a log.
	Busy bool
}

type cliStreamState struct {
	// streamed is the reply text since the last tool line: what the
	// turn's final reply begins with when nothing rewrote it.
	streamed strings.Builder
	// line is the unfinished last line on the terminal, kept only when
	// redrawing; open says whether there is one.
	line string
	open bool
	busy bool
	// shown: a redrawn line (the open line, or the busy indicator) sits
	// above the prompt and the next write replaces it.
	shown bool
}

// eraseAbove moves to the line above the prompt and clears it.
const eraseAbove = "\033[A\r\033[2K"

// NewStreamingCLI returns a CLI outlet that also shows replies while they
// are written.
func NewStreamingCLI(w io.Writer, o CLIStream) *CLI { return &CLI{w: w, o: o} }

// Begin marks that a turn was sent: a terminal shows the busy indicator.
func (c *CLI) Begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLine()
	c.st.streamed.Reset()
	if c.o.Busy {
		c.st.busy = true
		if c.o.Redraw {
			c.write(BusyIndicator + "\n")
			c.st.shown = true
			return
		}
		c.write(BusyIndicator)
	}
}

// Stream implements spine.Streamer: text is printed as it arrives, and a
// line per tool call.
func (c *CLI) Stream(_ context.Context, d spine.Delta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearBusy()
	if d.Tool != nil {
		c.endLine()
		c.write(ToolLine(d.Tool) + "\n")
		c.st.streamed.Reset()
		return
	}
	c.st.streamed.WriteString(d.Text)
	c.text(d.Text)
}

// ToolLine renders a tool call on one line: "· web_fetch {"url":…}".
func ToolLine(t *spine.ToolNote) string {
	args := strings.Join(strings.Fields(t.Arguments), " ")
	if utf8.RuneCountInString(args) > maxToolLineArgs {
		args = string([]rune(args)[:maxToolLineArgs]) + "…"
	}
	if args == "" || args == "{}" {
		return ToolLinePrefix + t.Name
	}
	return ToolLinePrefix + t.Name + " " + args
}

// finish prints a turn's reply: only what the stream has not shown yet
// when the reply continues what was streamed, else the whole reply on a
// line of its own.
func (c *CLI) finish(reply string) error {
	c.clearBusy()
	streamed := c.st.streamed.String()
	c.st.streamed.Reset()
	rest := reply
	if strings.HasPrefix(reply, streamed) {
		rest = reply[len(streamed):]
	} else {
		c.endLine()
	}
	c.text(rest + "\n")
	return c.err()
}

// text shows s after the unfinished line.
func (c *CLI) text(s string) {
	if !c.o.Redraw {
		c.write(s)
		if s != "" {
			c.st.open = s[len(s)-1] != '\n'
		}
		return
	}
	full := c.st.line + s
	out := full
	if c.st.shown {
		out = eraseAbove + out
	}
	c.st.shown = !strings.HasSuffix(full, "\n")
	if c.st.shown {
		out += "\n"
	}
	c.write(out)
	if i := strings.LastIndexByte(full, '\n'); i >= 0 {
		full = full[i+1:]
	}
	c.st.line, c.st.open = full, full != ""
}

// endLine finishes an unfinished line so the next output starts a line.
func (c *CLI) endLine() {
	if c.o.Redraw {
		// The open line is on screen, ended: it just stops being redrawn.
		// The busy indicator alone goes.
		if c.st.shown && !c.st.open {
			c.write(eraseAbove)
		}
		c.st.line, c.st.open, c.st.shown = "", false, false
		return
	}
	if c.st.open {
		c.text("\n")
	}
}

func (c *CLI) clearBusy() {
	if !c.st.busy {
		return
	}
	c.st.busy = false
	if !c.o.Redraw {
		// A redrawing writer erases the line itself before each write.
		c.write("\r\033[K")
	}
}

// werr keeps the first write error of a stream: Stream cannot return it,
// the reply's Deliver does.
func (c *CLI) write(s string) {
	if _, err := io.WriteString(c.w, s); err != nil && c.werr == nil {
		c.werr = fmt.Errorf("channels: cli write: %w", err)
	}
}

func (c *CLI) err() error {
	err := c.werr
	c.werr = nil
	return err
}

// Finish prints a turn's reply the way Deliver does, for surfaces that
// take the reply from the turn's ticket (`raven chat -m`).
func (c *CLI) Finish(reply string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finish(strings.TrimRight(reply, "\n"))
}

// Abort ends a turn that failed: the busy indicator goes and a partly
// streamed line is finished, so the error is printed on a line of its own.
func (c *CLI) Abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearBusy()
	c.endLine()
	c.st.streamed.Reset()
}
