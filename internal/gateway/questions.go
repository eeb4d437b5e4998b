package gateway

import (
	"context"
	"errors"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// continueAnswer submits the ANSWER-origin turn that continues a
// conversation after its owner answered a durable question, and records
// the run's end on the receipt.
func (g *Gateway) continueAnswer(ctx context.Context, conv, runID string, ans questions.OwnerAnswer) error {
	ch, id, ok := spine.SplitConversationKey(conv)
	if !ok {
		ch, id = "owner", conv
	}
	tk, err := g.App.Scheduler.Submit(spine.TurnRequest{Origin: spine.OriginAnswer, ConversationID: conv, Channel: ch, ChatID: id,
		Content: ans.Content(), Extras: map[string]any{"run_id": runID}})
	if err != nil {
		return err
	}
	g.App.GoUntilClose("answer-run", func(actx context.Context) error {
		res, err := tk.Wait(actx)
		if err != nil {
			return nil // shutting down: Recover marks it failed at next start
		}
		return g.Questions.FinishRun(context.WithoutCancel(actx), runID, res.Err)
	})
	return nil
}

// rpcErr maps the questions package's typed errors onto JSON-RPC errors.
func rpcErr(v any, err error) (any, error) {
	if err == nil {
		return v, nil
	}
	var qe *questions.Error
	if !errors.As(err, &qe) {
		return nil, err
	}
	msg := err.Error()
	var re *controlapi.RPCError
	switch qe.Code() {
	case "invalid_params", "not_answer":
		re = controlapi.InvalidParams("%s", msg)
	case "forbidden":
		re = controlapi.Forbidden("%s", msg)
	case "not_found":
		re = controlapi.NotFound("%s", msg)
	case "conflict", "expired":
		re = controlapi.Conflict("%s", msg)
	default:
		re = controlapi.Errorf(controlapi.CodeUnavailable, "%s", msg)
	}
	// The JSON-RPC code is coarser than the questions code (expired and
	// conflict share one); the data keeps the precise one for clients.
	re.Data = QuestionErrorData{Code: qe.Code(), Reason: qe.Reason}
	return nil, re
}

// QuestionErrorData is the data of a JSON-RPC error from the questions
// methods (input_get, input_answer, input_cancel, clarify.respond): the
// questions package's error code and reason.
type QuestionErrorData struct {
	Code   string `json:"questions_code"`
	Reason string `json:"reason,omitempty"`
}

// credentialGenerations adapts the auth store to the questions package's
// view of credentials: current generation, and whether still active.
type credentialGenerations struct{ s *auth.Store }

func (c credentialGenerations) CredentialGeneration(ctx context.Context, name string) (int, bool, error) {
	creds, err := c.s.List(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, cr := range creds {
		if cr.Name == name {
			return cr.Generation, !cr.Revoked(), nil
		}
	}
	return 0, false, nil
}
