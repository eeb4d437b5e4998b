package questions

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/raven-agent/raven/internal/auth"
)

// ClarifyRespondParams is the strict clarify.respond DTO.
type ClarifyRespondParams struct {
	Conversation string `json:"conversation"`
	Batch        string `json:"batch,omitempty"`
	Index        *int   `json:"index,omitempty"`
	// Choice is the 0-based index of the selected choice.
	Choice *int   `json:"choice,omitempty"`
	Label  string `json:"label,omitempty"`
	// Text is the free-form answer, or a note beside a selection.
	Text string `json:"text,omitempty"`
}

// ClarifyRespondResult is returned on success.
type ClarifyRespondResult struct {
	Accepted bool `json:"accepted"`
}

// ClarifyHandler serves clarify.respond for the control API.
type ClarifyHandler struct {
	Broker    *Broker
	Authority Authority
}

// ClarifyRespond decodes params strictly, checks the caller may answer on
// the conversation, and hands the answer to the broker.
func (h *ClarifyHandler) ClarifyRespond(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error) {
	var in ClarifyRespondParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	return h.Respond(ctx, p, in)
}

// Respond checks the decoded params and the caller's right to answer on
// the conversation, and hands the answer to the broker.
func (h *ClarifyHandler) Respond(ctx context.Context, p auth.Principal, in ClarifyRespondParams) (ClarifyRespondResult, error) {
	if err := checkString("conversation", in.Conversation, MaxConversationLen, true); err != nil {
		return ClarifyRespondResult{}, err
	}
	if in.Batch != "" {
		if err := checkUUID("batch", in.Batch); err != nil {
			return ClarifyRespondResult{}, err
		}
	}
	if err := checkString("label", in.Label, MaxOptionLen, false); err != nil {
		return ClarifyRespondResult{}, err
	}
	if err := checkString("text", in.Text, MaxAnswerTextLen, false); err != nil {
		return ClarifyRespondResult{}, err
	}
	if in.Choice == nil && in.Label == "" && strings.TrimSpace(in.Text) == "" {
		return ClarifyRespondResult{}, invalid("give choice, label or text")
	}
	if err := h.Authority.CanAnswer(ctx, p, in.Conversation); err != nil {
		return ClarifyRespondResult{}, err
	}
	err := h.Broker.Reply(in.Conversation, Response{Batch: in.Batch, Index: in.Index, Choice: in.Choice, Label: in.Label, Text: in.Text})
	if err != nil {
		return ClarifyRespondResult{}, err
	}
	return ClarifyRespondResult{Accepted: true}, nil
}
