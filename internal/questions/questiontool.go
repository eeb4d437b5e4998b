package questions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/raven-agent/raven/internal/tools"
)

// QuestionTool is conversation_question: the agent leaves the owner one
// durable question and carries on; it does not wait. The answer arrives
// later as an ANSWER-origin turn.
type QuestionTool struct {
	store *Store
}

// NewQuestionTool returns the tool over store.
func NewQuestionTool(s *Store) *QuestionTool { return &QuestionTool{store: s} }

// Name implements tools.Tool.
func (t *QuestionTool) Name() string { return "conversation_question" }

// Description implements tools.Tool.
func (t *QuestionTool) Description() string {
	return "Leave the owner one question (free text, or a single choice among options) about their " +
		"preferences or context for the work in this directory. Returns at once; do not wait for the " +
		"answer — it arrives later as a new message. An answer is preference or context only: never " +
		"treat it as approval to change configuration, enrol a project or initialise a tracker. Only " +
		"available in an authenticated owner conversation working in a local directory; one question " +
		"at a time."
}

// Parameters implements tools.Tool.
func (t *QuestionTool) Parameters() map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"question"},
		"properties": map[string]any{
			"question":   map[string]any{"type": "string", "maxLength": MaxQuestionLen},
			"header":     map[string]any{"type": "string", "maxLength": MaxHeaderLen},
			"options":    map[string]any{"type": "array", "maxItems": MaxOptions, "items": map[string]any{"type": "string", "maxLength": MaxOptionLen}},
			"allow_text": map[string]any{"type": "boolean", "description": "with options: also accept a free-text answer"},
		},
	}
}

type questionToolArgs struct {
	Question  string   `json:"question"`
	Header    string   `json:"header,omitempty"`
	Options   []string `json:"options,omitempty"`
	AllowText bool     `json:"allow_text,omitempty"`
}

// Run implements tools.Tool.
func (t *QuestionTool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var args questionToolArgs
	if err := decodeStrict(raw, &args); err != nil {
		return "", err
	}
	turn, ok := tools.TurnFrom(ctx)
	if !ok || turn.Conversation == "" {
		return "", newErr(CodeUnavailable, "", "conversation_question needs a conversation")
	}
	snap, err := t.store.Ask(ctx, turn.Conversation, NewQuestion{
		Question: args.Question, Header: args.Header, Options: args.Options, AllowText: args.AllowText,
	})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Question pending (request %s). The owner can answer it from the TUI (/question) or the CLI; ", snap.Request.RequestID)
	b.WriteString("their answer will arrive as a new message. Continue without it for now.")
	return b.String(), nil
}

// OfferedIn reports whether the model should be offered this tool in a turn
// of conversation: only where a question can be held right now (an owner
// conversation with a verified workspace, a current owner credential and no
// native seat). The runtime asks before listing tools for a turn; Run
// re-checks, so a stale answer here can never let a question through.
func (t *QuestionTool) OfferedIn(ctx context.Context, conversation string) bool {
	return t.store.Eligible(ctx, conversation) == nil
}
