package tui

import (
	"context"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Client is the part of the control-API client the TUI uses; the
// controlapi client satisfies it through a small adapter, tests use a fake.
type Client interface {
	Call(ctx context.Context, method string, params, result any) error
	// Notifications yields server→client notifications and is closed when
	// the connection ends — that close is how the TUI notices a gateway
	// restart.
	Notifications() <-chan Notification
	Close() error
}

// Notification is one server→client notification. It is the control
// API's own type, so *controlapi.Client is a Client as it stands.
type Notification = controlapi.Notification

// Dialer connects to the gateway; the TUI calls it again to reconnect.
type Dialer func(ctx context.Context) (Client, error)

// Control-API methods and notifications the TUI speaks.
// Their names are the contract's (package api), never spelled here.
const (
	MethodChatSend        = string(api.ChatSend)
	MethodChatAttach      = string(api.ChatAttach)
	MethodEventsSubscribe = string(api.EventsSubscribe)
	MethodClarifyRespond  = string(api.ClarifyRespond)
	MethodInputGet        = string(api.InputGet)
	MethodInputAnswer     = string(api.InputAnswer)
	MethodInputCancel     = string(api.InputCancel)

	NotifyChatMessage    = string(api.NotifyChatMessage)
	NotifyClarifyRequest = string(api.NotifyClarifyRequest)
)

// ChatSendParams is the chat.send request.
type ChatSendParams struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
}

// ChatAttachParams is the chat.attach request: it asks the gateway to route
// this conversation's replies and clarify prompts to this client.
type ChatAttachParams struct {
	Conversation string `json:"conversation"`
}

// ChatMessage is the chat.message notification payload (the tui outlet's).
type ChatMessage struct {
	Conversation string `json:"conversation"`
	Content      string `json:"content"`
	Origin       string `json:"origin,omitempty"`
	Proactive    bool   `json:"proactive"`
	Reply        bool   `json:"reply"`
}

// ClarifyRequest is the clarify.request payload, exactly the ClarifyPrompt
// contract.
type ClarifyRequest struct {
	Question    string   `json:"question"`
	Choices     []string `json:"choices"`
	Header      string   `json:"header"`
	Recommended string   `json:"recommended"`
	TimeoutS    int      `json:"timeout_s"`
	Index       int      `json:"index"`
	Total       int      `json:"total"`
	Batch       string   `json:"batch"`
}

// ClarifyRespondParams is the clarify.respond request. Choice is 0-based;
// Text is the free-form answer, or a note beside a choice.
type ClarifyRespondParams struct {
	Conversation string `json:"conversation"`
	Batch        string `json:"batch,omitempty"`
	Index        *int   `json:"index,omitempty"`
	Choice       *int   `json:"choice,omitempty"`
	Text         string `json:"text,omitempty"`
}

// Owner-question DTOs (seed 000), mirroring internal/questions.
type (
	InputGetParams struct {
		Conversation string `json:"conversation"`
	}
	InputAnswerParams struct {
		Conversation string `json:"conversation"`
		RequestID    string `json:"request_id"`
		Incarnation  string `json:"incarnation"`
		Revision     int64  `json:"revision"`
		OptionID     string `json:"option_id,omitempty"`
		Text         string `json:"text,omitempty"`
	}
	InputCancelParams struct {
		Conversation string `json:"conversation"`
		RequestID    string `json:"request_id"`
		Incarnation  string `json:"incarnation"`
		Revision     int64  `json:"revision"`
	}
	Snapshot struct {
		Conversation string       `json:"conversation"`
		Incarnation  string       `json:"incarnation"`
		Revision     int64        `json:"revision"`
		Status       string       `json:"status"`
		Request      *RequestView `json:"request,omitempty"`
		Receipt      *Receipt     `json:"receipt,omitempty"`
	}
	RequestView struct {
		RequestID   string   `json:"request_id"`
		Incarnation string   `json:"incarnation"`
		Kind        string   `json:"kind"`
		Header      string   `json:"header,omitempty"`
		Question    string   `json:"question"`
		Options     []Option `json:"options"`
		AllowText   bool     `json:"allow_text"`
	}
	Option struct {
		OptionID string `json:"option_id"`
		Label    string `json:"label"`
	}
	Receipt struct {
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
		Reason    string `json:"reason,omitempty"`
		RunID     string `json:"run_id,omitempty"`
		Duplicate bool   `json:"duplicate,omitempty"`
	}
)
