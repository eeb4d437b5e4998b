package tui

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// echoClient is a scripted gateway for trying the TUI by hand: it echoes
// chat, emits an event per call, and asks a clarify question on "ask".
type echoClient struct {
	mu     sync.Mutex
	notes  chan Notification
	seq    int
	closed bool
}

func (e *echoClient) Call(_ context.Context, method string, params, result any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return context.Canceled
	}
	e.seq++
	e.push(api.NotifyEvent.Name(), map[string]any{"seq": e.seq, "kind": "call." + method, "conversation": "tui:main"})
	if method == api.ChatSend.Name() {
		p := params.(api.ChatSendParams)
		if strings.Contains(p.Text, "ask") {
			e.push(api.NotifyClarifyRequest.Name(), questions.ClarifyRequest{Question: "Which environment?", Choices: []string{"staging", "prod"},
				Header: "Deploy", Recommended: "staging", TimeoutS: 90, Index: 0, Total: 1, Batch: "b"})
		} else {
			e.push(api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "echo: " + p.Text, Reply: true})
			e.push(api.NotifyChatMessage.Name(), api.ChatMessage{Conversation: "tui:main", Content: "Reminder: stretch.", Proactive: true})
		}
	}
	if method == api.InputGet.Name() {
		b, _ := json.Marshal(questions.Snapshot{Conversation: "tui:main", Revision: 3, Incarnation: "i", Status: "pending",
			Request: &questions.RequestView{RequestID: "r", Question: "Which tracker do you use?", Options: []questions.Option{{OptionID: "a", Label: "Linear"}, {OptionID: "b", Label: "GitHub"}}}})
		return json.Unmarshal(b, result)
	}
	return json.Unmarshal([]byte(`{"status":"accepted","run_id":"run-1"}`), result)
}

func (e *echoClient) push(method string, v any) {
	b, _ := json.Marshal(v)
	select {
	case e.notes <- Notification{Method: method, Params: b}:
	default:
	}
}

func (e *echoClient) Notifications() <-chan Notification { return e.notes }

func (e *echoClient) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.notes)
	}
	return nil
}

// TestManualTUI runs the real TUI against echoClient on the terminal:
// RAVEN_TUI_MANUAL=1 go test -run TestManualTUI ./internal/tui (in tmux).
func TestManualTUI(t *testing.T) {
	if os.Getenv("RAVEN_TUI_MANUAL") == "" {
		t.Skip("set RAVEN_TUI_MANUAL=1 to try the TUI by hand")
	}
	dial := func(context.Context) (Client, error) { return &echoClient{notes: make(chan Notification, 64)}, nil }
	if err := Run(context.Background(), Options{Conversation: "tui:main", Dial: dial}); err != nil {
		t.Fatal(err)
	}
}
