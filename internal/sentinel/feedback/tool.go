package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/raven-agent/raven/internal/sentinel/textcut"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

type sessionKey struct{}

// WithSession returns ctx carrying the current turn's session key
// ("channel:chat_id"); the user-inbound hook sets it for each turn.
func WithSession(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKey{}, key)
}

// SessionFrom returns the session key set by WithSession.
func SessionFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(sessionKey{}).(string)
	return k, ok && k != ""
}

// ErrBadArgs is matched by errors for malformed tool arguments.
var ErrBadArgs = errors.New("nudge_feedback: invalid arguments")

// ToolName is the name the model calls.
const ToolName = "nudge_feedback"

const maxReason = 500

// Recorder records the owner's verdict on a nudge. *Tracker is one; the
// Sentinel's System.RecordVerdict also feeds the policy and is the one the
// gateway and the CLI use.
type Recorder interface {
	RecordVerdict(ctx context.Context, nudgeID, verdict, session, reason string) (Record, error)
}

// Tool is the nudge_feedback tool (a tools.Tool): the main model marks a
// proactive nudge accepted, dismissed or neutral from the owner's reply, at
// no extra model call.
type Tool struct {
	*tools.Typed[toolArgs]
	rec Recorder
}

// NewTool returns the tool recording through rec.
func NewTool(rec Recorder) *Tool {
	t := &Tool{rec: rec}
	t.Typed = tools.Must(tools.New(ToolName, toolDescription, t.run,
		tools.OneOf("verdict", EventAccepted, EventDismissed, EventNeutral), tools.Len("nudge_id", 1, 128)))
	return t
}

// toolDescription tells the model when to call the tool.
const toolDescription = "Record how the owner received a proactive nudge you sent (its id is shown with the nudge). " +
	"Call it when the owner's reply shows they welcomed it (accepted), did not want it or asked you to stop (dismissed), " +
	"or neither (neutral). Do not call it for ordinary messages."

type toolArgs struct {
	Verdict string `json:"verdict" jsonschema:"How the owner received the nudge."`
	NudgeID string `json:"nudge_id" jsonschema:"The id of the nudge, e.g. n-1a2b3c4d5e6f7a8b."`
	Reason  string `json:"reason,omitempty" jsonschema:"A few words from the owner's reply that justify the verdict."`
}

// Run validates and records the verdict for the current turn's session.
// Errors are meant to be shown to the model; bad arguments match
// ErrBadArgs as well as tools.ErrInvalidArgs.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := t.Typed.Run(ctx, args)
	if errors.Is(err, tools.ErrInvalidArgs) {
		return "", badArgs{err}
	}
	return out, err
}

// badArgs is the registry's argument error, also matching ErrBadArgs,
// worded once.
type badArgs struct{ err error }

func (e badArgs) Error() string   { return e.err.Error() }
func (e badArgs) Unwrap() []error { return []error{ErrBadArgs, e.err} }

func (t *Tool) run(ctx context.Context, a toolArgs) (string, error) {
	a.NudgeID = strings.TrimSpace(a.NudgeID)
	switch {
	case !IsVerdict(a.Verdict):
		return "", fmt.Errorf("%w: verdict must be accepted, dismissed or neutral (got %q)", ErrBadArgs, a.Verdict)
	case a.NudgeID == "":
		return "", fmt.Errorf("%w: nudge_id is required", ErrBadArgs)
	case len(a.Reason) > maxReason:
		a.Reason = textcut.Prefix(a.Reason, maxReason)
	}
	rec, err := t.rec.RecordVerdict(ctx, a.NudgeID, a.Verdict, turnSession(ctx), a.Reason)
	if errors.Is(err, ErrUnknownNudge) {
		return "", fmt.Errorf("nudge_feedback: %w: no nudge with id %q was sent; use the id shown with the nudge", ErrUnknownNudge, a.NudgeID)
	}
	if err != nil {
		return "", fmt.Errorf("nudge_feedback: %w", err)
	}
	return fmt.Sprintf("Recorded %s for nudge %s.", rec.Event, rec.NudgeID), nil
}

// turnSession is the session of the running turn: the agent loop's per-turn
// context first, then WithSession (callers outside the agent loop).
func turnSession(ctx context.Context) string {
	if ti, ok := tools.TurnFrom(ctx); ok {
		if ti.Conversation != "" {
			return ti.Conversation
		}
		if ti.Channel != "" && ti.ChatID != "" {
			return spine.ConversationKey(ti.Channel, ti.ChatID)
		}
	}
	s, _ := SessionFrom(ctx)
	return s
}
