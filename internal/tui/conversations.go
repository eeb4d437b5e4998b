package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Conversation lifecycle methods the TUI calls (internal/questions serves
// them).
const (
	MethodConversationsList    = string(api.ConversationsList)
	MethodConversationsTake    = string(api.ConversationsTake)
	MethodConversationsRelease = string(api.ConversationsRelease)
	MethodConversationsOpen    = string(api.ConversationsOpen)
)

// Conversation-lifecycle DTOs, mirroring internal/questions.
type (
	ConversationParams struct {
		Conversation string `json:"conversation"`
	}
	OpenParams struct {
		Conversation string `json:"conversation"`
		Workspace    string `json:"workspace"`
	}
	ConversationItem struct {
		ID              string `json:"id"`
		Kind            string `json:"kind"`
		NativeOwner     string `json:"native_owner,omitempty"`
		CanHoldQuestion bool   `json:"can_hold_question"`
		HoldReason      string `json:"hold_reason,omitempty"`
		Controller      string `json:"controller,omitempty"`
		PendingRequest  string `json:"pending_request,omitempty"`
		Workspace       struct {
			Path string `json:"path"`
		} `json:"workspace"`
	}
	ConversationList struct {
		Conversations []ConversationItem `json:"conversations"`
	}
	TakeResult struct {
		Conversation string `json:"conversation"`
		Lease        struct {
			Holder    string    `json:"holder"`
			ExpiresAt time.Time `json:"expires_at"`
			Replaced  string    `json:"replaced,omitempty"`
		} `json:"lease"`
	}
	ReleaseResult struct {
		Released bool `json:"released"`
	}
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
	var d struct {
		Code   string `json:"questions_code"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(b, &d)
	return d.Code, d.Reason
}

// conversationCommand runs /take, /release and /conversations.
func (m *Model) conversationCommand(verb string) tea.Cmd {
	p := ConversationParams{Conversation: m.o.Conversation}
	switch verb {
	case "/take":
		return m.call("take", MethodConversationsTake, p)
	case "/release":
		return m.call("release", MethodConversationsRelease, p)
	}
	return m.call("conversations", MethodConversationsList, struct{}{})
}

func (m *Model) conversationDone(r rpcDoneMsg) tea.Cmd {
	if r.err != nil {
		m.notice = refusal(r.what, r.err)
		if r.what == "open" {
			m.notice = "owner conversation not bound to " + m.o.Workspace + " (no questions here): " + r.err.Error()
			return m.refreshQuestion()
		}
		return nil
	}
	switch r.what {
	case "open":
		return m.refreshQuestion()
	case "take":
		var t TakeResult
		_ = json.Unmarshal(r.result, &t)
		m.notice = fmt.Sprintf("%s controls %s until %s", t.Lease.Holder, t.Conversation, t.Lease.ExpiresAt.Local().Format("15:04:05"))
		if t.Lease.Replaced != "" {
			m.notice += " (replaced " + t.Lease.Replaced + ")"
		}
		// Authority changed: what is answerable is re-read, never assumed.
		return m.refreshQuestion()
	case "release":
		var rr ReleaseResult
		_ = json.Unmarshal(r.result, &rr)
		m.notice = "released control of " + m.o.Conversation
		if !rr.Released {
			m.notice = "nobody held control of " + m.o.Conversation
		}
	case "conversations":
		var l ConversationList
		if err := json.Unmarshal(r.result, &l); err != nil {
			m.notice = "conversations: bad answer: " + err.Error()
			return nil
		}
		m.panel = m.panel[:0]
		for _, c := range l.Conversations {
			m.panel = append(m.panel, describeConversation(c, c.ID == m.o.Conversation))
		}
		if len(m.panel) == 0 {
			m.panel = append(m.panel, "no conversations")
		}
	}
	return nil
}

func describeConversation(c ConversationItem, current bool) string {
	mark := "  "
	if current {
		mark = "▸ "
	}
	parts := []string{mark + c.ID, c.Kind}
	if c.Workspace.Path != "" {
		parts = append(parts, c.Workspace.Path)
	}
	if c.CanHoldQuestion {
		parts = append(parts, "can hold a question")
	} else {
		parts = append(parts, "no questions ("+c.HoldReason+")")
	}
	if c.Controller != "" {
		parts = append(parts, "controlled by "+c.Controller)
	}
	if c.NativeOwner != "" {
		parts = append(parts, "native seat "+c.NativeOwner)
	}
	if c.PendingRequest != "" {
		parts = append(parts, "question pending")
	}
	return strings.Join(parts, " · ")
}
