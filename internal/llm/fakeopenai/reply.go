package fakeopenai

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Reply is what the fake model answers one request with.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// Status, when not 0 or 200, answers with an OpenAI-style error body
	// carrying Text as the message.
	Status int
	// Wait, when set, holds the answer until it is closed (or the client
	// gives up), so a test can observe a turn in flight.
	Wait <-chan struct{}
	// Hold, for a streamed request, sends the first text chunk and then
	// holds the rest until it is closed (or the client gives up), so a
	// test can see a reply partly written.
	Hold <-chan struct{}
}

// Text is a plain assistant reply.
func Text(s string) Reply { return Reply{Text: s} }

// Call is a reply asking for one tool call; args is marshalled to JSON
// (a string or json.RawMessage is sent as is). The call id is assigned
// by the server when empty.
func Call(name string, args any) Reply {
	return Reply{ToolCalls: []ToolCall{{Name: name, Arguments: argsJSON(args)}}}
}

// Error is an HTTP error reply (429 and 5xx are retried by Raven).
func Error(status int, message string) Reply { return Reply{Status: status, Text: message} }

func argsJSON(args any) string {
	switch a := args.(type) {
	case string:
		return a
	case json.RawMessage:
		return string(a)
	case nil:
		return "{}"
	}
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprintf(`{"fakeopenai_marshal_error":%q}`, err.Error())
	}
	return string(b)
}

// Matcher selects the requests a Rule answers.
type Matcher func(Request) bool

// Responder builds the reply to a request.
type Responder func(Request) Reply

// Rule answers the requests Match selects.
type Rule struct {
	Match Matcher
	Reply Responder
}

// Always answers every request with r.
func Always(r Reply) Responder { return func(Request) Reply { return r } }

// LastUserContains matches a request whose last user message contains s
// (case-insensitive).
func LastUserContains(s string) Matcher {
	s = strings.ToLower(s)
	return func(r Request) bool { return strings.Contains(strings.ToLower(r.LastUser()), s) }
}

// SystemContains matches a request whose system prompt contains s.
func SystemContains(s string) Matcher {
	return func(r Request) bool { return strings.Contains(r.System(), s) }
}

// AfterToolResult matches a request whose last message is a tool result:
// the second leg of a tool call.
func AfterToolResult() Matcher {
	return func(r Request) bool { return r.Last().Role == "tool" }
}

// Offers matches a request that offered a tool named name.
func Offers(name string) Matcher { return func(r Request) bool { return r.HasTool(name) } }

// All matches when every m matches.
func All(ms ...Matcher) Matcher {
	return func(r Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// DefaultResponder is the answer when no queued reply or rule applies: a
// deterministic echo of the last user message, and "done." after a tool
// result so a tool loop always ends.
func DefaultResponder(r Request) Reply {
	if r.Last().Role == "tool" {
		return Text("done.")
	}
	return Text("fake reply to: " + oneLine(r.LastUser()))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
