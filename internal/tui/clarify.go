package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// clarifyState is the ClarifyPrompt: a single-select over the choices plus
// a last "other" row for a free-form answer. Text typed while a choice is
// selected travels beside it as a note.
type clarifyState struct {
	req      questions.ClarifyRequest
	deadline time.Time
	cursor   int
	// sending is set while clarify.respond is in flight, so a second
	// Enter cannot answer twice.
	sending bool
	// answer is what the owner chose, shown in the transcript once the
	// gateway accepted it.
	answer string
}

func newClarify(r questions.ClarifyRequest, now time.Time) *clarifyState {
	c := &clarifyState{req: r, deadline: now.Add(time.Duration(r.TimeoutS) * time.Second)}
	// Start on the recommended choice: it is a hint the owner can accept
	// with one key, never an answer taken on their behalf.
	for i, ch := range r.Choices {
		if ch == r.Recommended {
			c.cursor = i
		}
	}
	return c
}

func (c *clarifyState) tag() string { return fmt.Sprintf("%s/%d", c.req.Batch, c.req.Index) }

// rows is the number of selectable rows: the choices and "other".
func (c *clarifyState) rows() int { return len(c.req.Choices) + 1 }

func (c *clarifyState) onOther() bool { return c.cursor == len(c.req.Choices) }

func (c *clarifyState) move(d int) {
	c.cursor = (c.cursor + d + c.rows()) % c.rows()
}

func (m *Model) respondClarify(text string) tea.Cmd {
	c := m.clarify
	if c.sending {
		m.notice = "answer on its way…"
		return nil
	}
	if c.deadline.Before(m.o.Clock.Now()) {
		m.clarify = nil
		if text == "" {
			m.notice = "this question's time is up; the agent was told you did not answer"
			return nil
		}
		// What was typed is still a message: the gateway tells the owner
		// the question expired and treats it as a new one.
		cmd := m.submit(text)
		m.notice = "this question's time is up; your text was sent as a new message"
		return cmd
	}
	idx := c.req.Index
	p := questions.ClarifyRespondParams{Conversation: m.o.Conversation, Batch: c.req.Batch, Index: &idx}
	if c.onOther() {
		if text == "" {
			m.notice = "type an answer, or pick a choice with ↑/↓"
			return nil
		}
		p.Text = text
		c.answer = text
	} else {
		choice := c.cursor
		p.Choice, p.Text = &choice, text
		c.answer = c.req.Choices[choice]
		if text != "" {
			c.answer += " — " + text
		}
	}
	if c.req.Header != "" {
		c.answer = "[" + c.req.Header + "] " + c.answer
	}
	c.sending = true
	return rpcTagged(m, "clarify", c.tag(), api.ClarifyRespond, p, (*Model).clarifyDone)
}

// clarifyDone settles the prompt the answer was for, when it is still the
// one on screen.
func (m *Model) clarifyDone(r reply[questions.ClarifyRespondResult]) tea.Cmd {
	mine := m.clarify != nil && m.clarify.tag() == r.tag
	if r.err != nil {
		m.notice = "answer refused: " + r.err.Error()
		// Not found or conflict: the question is gone (answered
		// elsewhere, timed out, superseded, gateway restarted). Keeping
		// it would trap every Enter until its countdown ran out.
		if mine && (controlapi.IsCode(r.err, controlapi.CodeNotFound) || controlapi.IsCode(r.err, controlapi.CodeConflict)) {
			m.clarify = nil
			m.notice += " — the question is no longer open"
		} else if mine {
			m.clarify.sending = false
		}
		return nil
	}
	m.notice = "answer sent"
	if mine {
		m.addMessage("you", m.clarify.answer)
		m.clarify = nil
	}
	return nil
}

func (m *Model) clarifyView(b *strings.Builder) {
	c := m.clarify
	left := max(c.deadline.Sub(m.o.Clock.Now()), 0).Round(time.Second)
	title := "question"
	if c.req.Header != "" {
		title = "[" + c.req.Header + "]"
	}
	if c.req.Total > 1 {
		title += fmt.Sprintf(" %d/%d", c.req.Index+1, c.req.Total)
	}
	budget := fmt.Sprintf("%d:%02d left", int(left.Minutes()), int(left.Seconds())%60)
	if left == 0 {
		budget = "time is up"
	}
	if c.sending {
		budget += " · sending…"
	}
	rule(b, m.width, "─ "+title+" · "+budget+" ")
	b.WriteString(wrap(c.req.Question, m.width) + "\n")
	for i, ch := range c.req.Choices {
		cur := "  "
		if i == c.cursor {
			cur = "> "
		}
		rec := ""
		if ch == c.req.Recommended {
			rec = "  (recommended)"
		}
		fmt.Fprintf(b, "%s%d. %s%s\n", cur, i+1, ch, rec)
	}
	cur := "  "
	if c.onOther() {
		cur = "> "
	}
	if len(c.req.Choices) == 0 {
		b.WriteString("  type your answer below and press enter\n")
	} else {
		b.WriteString(cur + "✎ other: type an answer below\n")
		b.WriteString("  ↑/↓ choose · enter answers (text typed beside a choice is sent as a note)\n")
	}
}
