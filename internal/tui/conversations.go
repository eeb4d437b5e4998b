package tui

import (
	"encoding/json"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// refusal renders a refused call whole, with the advice that fits it: a
// device that is not the controller must take control first; a conflict
// means what is on screen is stale and must be read again.
func refusal(what string, err error) string {
	code, reason := errorCode(err)
	msg := what + " refused: " + err.Error()
	switch {
	case reason == "not_controller":
		return msg + " — take control first: /take"
	case code == "conflict" || code == "expired" || controlapi.IsCode(err, controlapi.CodeConflict):
		return msg + " — read again: /question"
	}
	return msg
}

// errorCode extracts the questions code and reason a gateway puts in an
// error's data.
func errorCode(err error) (code, reason string) {
	var re *controlapi.RPCError
	if !errors.As(err, &re) || re.Data == nil {
		return "", ""
	}
	b, _ := json.Marshal(re.Data)
	var d api.QuestionErrorData
	_ = json.Unmarshal(b, &d)
	return d.Code, d.Reason
}

// conversationCommand runs /take, /release and /conversations.
func (m *Model) conversationCommand(verb string) tea.Cmd {
	switch verb {
	case "/take":
		return rpc(m, "take", api.ConversationsTake, questions.TakeParams{Conversation: m.o.Conversation}, (*Model).takeDone)
	case "/release":
		return rpc(m, "release", api.ConversationsRelease, questions.ConversationParams{Conversation: m.o.Conversation}, (*Model).releaseDone)
	}
	return rpc(m, "conversations", api.ConversationsList, api.Empty{}, (*Model).listDone)
}

// openDone reads the question once the binding is settled; a refused
// binding is said, since this conversation then holds no questions.
func (m *Model) openDone(r reply[questions.OpenResult]) tea.Cmd {
	if r.err != nil {
		m.notice = "owner conversation not bound to " + m.o.Workspace + " (no questions here): " + r.err.Error()
	}
	return m.refreshQuestion()
}

func (m *Model) takeDone(r reply[questions.TakeResult]) tea.Cmd {
	if r.err != nil {
		m.notice = refusal(r.what, r.err)
		return nil
	}
	t := r.resp
	m.notice = fmt.Sprintf("%s controls %s until %s", t.Lease.Holder, t.Conversation, t.Lease.ExpiresAt.Local().Format("15:04:05"))
	if t.Lease.Replaced != "" {
		m.notice += " (replaced " + t.Lease.Replaced + ")"
	}
	// Authority changed: what is answerable is re-read, never assumed.
	return m.refreshQuestion()
}

func (m *Model) releaseDone(r reply[questions.ReleaseResult]) tea.Cmd {
	if r.err != nil {
		m.notice = refusal(r.what, r.err)
		return nil
	}
	m.notice = "released control of " + m.o.Conversation
	if !r.resp.Released {
		m.notice = "nobody held control of " + m.o.Conversation
	}
	return nil
}

func (m *Model) listDone(r reply[questions.ListResult]) tea.Cmd {
	if r.err != nil {
		m.notice = refusal(r.what, r.err)
		return nil
	}
	m.panel = m.panel[:0]
	for _, c := range r.resp.Conversations {
		m.panel = append(m.panel, describeConversation(c, c.ID == m.o.Conversation))
	}
	if len(m.panel) == 0 {
		m.panel = append(m.panel, "no conversations")
	}
	return nil
}

func describeConversation(c questions.ConversationView, current bool) string {
	mark := "  "
	if current {
		mark = "▸ "
	}
	return mark + c.ID + " · " + string(c.Kind) + " · " + c.Summary()
}
