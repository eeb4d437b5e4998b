package fakeopenai

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Request is one chat completion request as the server decoded it.
type Request struct {
	Model       string          `json:"model"`
	Messages    []Message       `json:"messages"`
	Tools       []Tool          `json:"tools,omitempty"`
	ToolChoice  json.RawMessage `json:"tool_choice,omitempty"`
	MaxTokens   int             `json:"max_tokens,omitempty"`
	MaxComplete int             `json:"max_completion_tokens,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	Reasoning   string          `json:"reasoning_effort,omitempty"`
	Stream      bool            `json:"stream,omitempty"`

	// Header is the HTTP header the request came with (Authorization…).
	Header http.Header `json:"-"`
	// Body is the raw request body, for assertions on fields not decoded.
	Body json.RawMessage `json:"-"`
}

// Message is one chat message on the wire. Content is flattened to text
// whether the client sent a string or an array of text parts.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// UnmarshalJSON accepts string, null and array-of-parts content.
func (m *Message) UnmarshalJSON(b []byte) error {
	type wire struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, ToolCallID: w.ToolCallID, Name: w.Name}
	for _, c := range w.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if len(w.Content) == 0 || string(w.Content) == "null" {
		return nil
	}
	if err := json.Unmarshal(w.Content, &m.Content); err == nil {
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(w.Content, &parts); err != nil {
		return err
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	m.Content = sb.String()
	return nil
}

// Tool is one function the client offered the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// UnmarshalJSON reads the {"type":"function","function":{…}} wrapper.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var w struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = Tool{Name: w.Function.Name, Description: w.Function.Description, Parameters: w.Function.Parameters}
	return nil
}

// ToolCall is a call the model asks for (in a reply) or asked for (in an
// assistant message of a later request).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// System returns the system messages' text, joined by blank lines.
func (r Request) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

// LastUser returns the text of the last user message ("" if none).
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Last returns the final message (the zero Message if there is none).
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ToolResult returns the result message answering the call with id.
func (r Request) ToolResult(id string) (Message, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m, true
		}
	}
	return Message{}, false
}

// ToolNames lists the offered tools' names in order.
func (r Request) ToolNames() []string {
	out := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out
}

// HasTool reports whether a tool named name was offered.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
