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
	*tools.Typed[questionToolArgs]
	store *Store
}

// NewQuestionTool returns the tool over store.
func NewQuestionTool(s *Store) *QuestionTool {
	t := &QuestionTool{store: s}
	t.Typed = tools.Must(tools.New("conversation_question", questionToolDescription, t.run,
		tools.Len("question", 0, MaxQuestionLen), tools.Len("header", 0, MaxHeaderLen),
		tools.Len("options", 0, MaxOptions), tools.Len("options[]", 0, MaxOptionLen)))
	return t
}

const questionToolDescription = "Leave the owner one question (free text, or a single choice among options) about their " +
	"preferences or context for the work in this directory. Returns at once; do not wait for the " +
	"answer — it arrives later as a new message. An answer is preference or context only: never " +
	"treat it as approval to change configuration, enrol a project or initialise a tracker. Only " +
	"available in an authenticated owner conversation working in a local directory; one question " +
	"at a time."

type questionToolArgs struct {
	Question  string   `json:"question"`
	Header    string   `json:"header,omitempty"`
	Options   []string `json:"options,omitempty"`
	AllowText bool     `json:"allow_text,omitempty" jsonschema:"with options: also accept a free-text answer"`
}

// Run implements tools.Tool: bad arguments are invalid_params, as on the
// control API.
func (t *QuestionTool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	return runInvalidParams(ctx, t.Typed, raw)
}

func (t *QuestionTool) run(ctx context.Context, args questionToolArgs) (string, error) {
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
