package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// questionCommand runs /question [answer N | text ... | cancel]. Answer and
// cancel bind to the request and revision on screen, never to whatever is
// current on the server: the owner answers what they read.
func (m *Model) questionCommand(args string) tea.Cmd {
	verb, rest, _ := strings.Cut(args, " ")
	rest = strings.TrimSpace(rest)
	if verb == "" {
		return rpc(m, "question", api.InputGet, questions.GetParams{Conversation: m.o.Conversation}, (*Model).questionFetched)
	}
	q := m.question
	if q == nil || q.Request == nil || q.Status != "pending" {
		m.notice = "no question on screen: run /question first"
		return nil
	}
	bind := func(p *questions.AnswerParams) {
		p.Conversation, p.RequestID, p.Incarnation, p.Revision = m.o.Conversation, q.Request.RequestID, q.Incarnation, q.Revision
	}
	switch verb {
	case "answer":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > len(q.Request.Options) {
			m.notice = fmt.Sprintf("usage: /question answer N (1..%d)", len(q.Request.Options))
			return nil
		}
		var p questions.AnswerParams
		bind(&p)
		p.OptionID = q.Request.Options[n-1].OptionID
		return rpc(m, "question-answer", api.InputAnswer, p, (*Model).questionDone)
	case "text":
		if rest == "" {
			m.notice = "usage: /question text YOUR ANSWER"
			return nil
		}
		if !q.Request.AllowText {
			m.notice = "this question takes a choice, not text: /question answer N"
			return nil
		}
		var p questions.AnswerParams
		bind(&p)
		p.Text = rest
		return rpc(m, "question-answer", api.InputAnswer, p, (*Model).questionDone)
	case "cancel":
		p := questions.CancelParams{Conversation: m.o.Conversation, RequestID: q.Request.RequestID, Incarnation: q.Incarnation, Revision: q.Revision}
		return rpc(m, "question-cancel", api.InputCancel, p, (*Model).questionDone)
	}
	m.notice = "usage: /question | /question answer N | /question text ... | /question cancel"
	return nil
}

// refreshQuestion re-reads the owner question without being asked to, on
// connect and on its lifecycle events.
func (m *Model) refreshQuestion() tea.Cmd {
	return rpcTagged(m, "question", "auto", api.InputGet, questions.GetParams{Conversation: m.o.Conversation}, (*Model).questionFetched)
}

func (m *Model) questionFetched(r reply[questions.Snapshot]) tea.Cmd {
	if controlapi.IsCode(r.err, controlapi.CodeNotFound) {
		// A conversation that never had an owner question is the common
		// case, not an error worth a notice on every connect.
		m.question = nil
		if r.tag != "auto" {
			m.notice = "no owner question for " + m.o.Conversation
		}
		return nil
	}
	if r.err != nil {
		m.notice = "question: " + r.err.Error()
		return nil
	}
	s := r.resp
	m.question = &s
	return nil
}

// questionDone reports an answer or cancel. Either way the displayed
// snapshot is dropped: after a conflict the owner must read the question
// again, and after success it is no longer pending.
func (m *Model) questionDone(r reply[questions.Receipt]) tea.Cmd {
	m.question = nil
	if r.err != nil {
		m.notice = refusal("answer", r.err)
		if !strings.Contains(m.notice, " — ") {
			m.notice += " — run /question to read it again"
		}
		return nil
	}
	rc := r.resp
	switch {
	case r.what == "question-cancel":
		m.notice = "question cancelled"
	case rc.Duplicate:
		m.notice = "already answered with the same answer (receipt " + rc.Status + ")"
	default:
		m.notice = "answer accepted (" + rc.Status + "); Raven continues in run " + rc.RunID
	}
	return nil
}

func (m *Model) questionView(b *strings.Builder) {
	q := m.question
	if q == nil || q.Request == nil || q.Status != "pending" {
		return
	}
	title := "owner question"
	if q.Request.Header != "" {
		title += " [" + q.Request.Header + "]"
	}
	rule(b, m.width, fmt.Sprintf("─ %s · rev %d ", title, q.Revision))
	b.WriteString(wrap(q.Request.Question, m.width) + "\n")
	for i, o := range q.Request.Options {
		fmt.Fprintf(b, "  %d. %s\n", i+1, o.Label)
	}
	hint := "  /question answer N"
	if q.Request.AllowText {
		hint += " · /question text ..."
	}
	b.WriteString(hint + " · /question cancel\n")
}
