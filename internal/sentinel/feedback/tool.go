package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Tool is the nudge_feedback tool: the main model marks a proactive nudge
// accepted, dismissed or neutral from the owner's reply.
type Tool struct {
	Tracker *Tracker
	// OnVerdict updates the policy (dismissal cooldown, topic statistics);
	// it runs after the verdict is recorded.
	OnVerdict func(nudgeID, verdict string)
}

// NewTool returns the tool over tracker.
func NewTool(tracker *Tracker, onVerdict func(nudgeID, verdict string)) *Tool {
	return &Tool{Tracker: tracker, OnVerdict: onVerdict}
}

// Name is the tool name.
func (t *Tool) Name() string { return ToolName }

// Description tells the model when to call the tool.
func (t *Tool) Description() string {
	return "Record how the owner received a proactive nudge you sent (its id is shown with the nudge). " +
		"Call it when the owner's reply shows they welcomed it (accepted), did not want it or asked you to stop (dismissed), " +
		"or neither (neutral). Do not call it for ordinary messages."
}

var toolSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "verdict": {"type": "string", "enum": ["accepted", "dismissed", "neutral"], "description": "How the owner received the nudge."},
    "nudge_id": {"type": "string", "description": "The id of the nudge, e.g. n-1a2b3c4d5e6f7a8b."},
    "reason": {"type": "string", "description": "A few words from the owner's reply that justify the verdict."}
  },
  "required": ["verdict", "nudge_id"],
  "additionalProperties": false
}`)

// Schema is the JSON schema of the arguments.
func (t *Tool) Schema() json.RawMessage { return toolSchema }

type toolArgs struct {
	Verdict string `json:"verdict"`
	NudgeID string `json:"nudge_id"`
	Reason  string `json:"reason"`
}

// Run records the verdict. Errors are meant to be shown to the model.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a toolArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	if dec.More() {
		return "", fmt.Errorf("%w: trailing data after the arguments object", ErrBadArgs)
	}
	a.NudgeID = strings.TrimSpace(a.NudgeID)
	switch {
	case !IsVerdict(a.Verdict):
		return "", fmt.Errorf("%w: verdict must be accepted, dismissed or neutral (got %q)", ErrBadArgs, a.Verdict)
	case a.NudgeID == "" || len(a.NudgeID) > 128:
		return "", fmt.Errorf("%w: nudge_id is required", ErrBadArgs)
	case len(a.Reason) > maxReason:
		a.Reason = a.Reason[:maxReason]
	}
	session, _ := SessionFrom(ctx)
	rec, err := t.Tracker.RecordVerdict(ctx, a.NudgeID, a.Verdict, session, a.Reason)
	if errors.Is(err, ErrUnknownNudge) {
		return "", fmt.Errorf("nudge_feedback: %w: no nudge with id %q was sent; use the id shown with the nudge", ErrUnknownNudge, a.NudgeID)
	}
	if err != nil {
		return "", fmt.Errorf("nudge_feedback: %w", err)
	}
	if t.OnVerdict != nil {
		t.OnVerdict(rec.NudgeID, rec.Event)
	}
	return fmt.Sprintf("Recorded %s for nudge %s.", rec.Event, rec.NudgeID), nil
}
