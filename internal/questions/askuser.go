package questions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/raven-agent/raven/internal/tools"
)

// AskUserTool is the ask_user tool: it pauses the turn until the owner
// answers through the Broker or the call's one budget ends.
type AskUserTool struct {
	*tools.Typed[askUserArgs]
	broker *Broker
	budget time.Duration
}

// NewAskUserTool returns the tool; budget is tools.ask_user.timeout
// (0 means DefaultAskBudget).
func NewAskUserTool(b *Broker, budget time.Duration) *AskUserTool {
	if budget <= 0 {
		budget = DefaultAskBudget
	}
	t := &AskUserTool{broker: b, budget: budget}
	t.Typed = tools.Must(tools.New("ask_user", askUserDescription, t.run,
		tools.Len("questions", 1, MaxBatchQuestions), tools.Len("questions[].question", 0, MaxQuestionLen),
		tools.Len("questions[].header", 0, MaxHeaderLen), tools.Len("questions[].choices", 0, MaxOptions),
		tools.Len("questions[].choices[]", 0, MaxOptionLen),
		func(s *jsonschema.Schema) {
			tools.At(s, "questions[].header").Description = "short chip label"
			tools.At(s, "questions[].recommended").Description = "the choice you would pick; must be one of choices"
		}))
	return t
}

const askUserDescription = "Ask the owner one to five short questions and wait for the answers. Use it only when you " +
	"cannot proceed sensibly without their input. Offer choices when the answer is one of a few " +
	"options and name the one you recommend. If the owner does not answer in time, the result says " +
	"so: do not assume the recommended option was chosen."

// WaitsForOwner marks a tool whose run is mostly waiting for a person: the
// agent loop must not apply its per-tool work timeout to it. The broker's
// own budget bounds the wait.
func (t *AskUserTool) WaitsForOwner() bool { return true }

type askUserArgs struct {
	Questions []Question `json:"questions"`
}

// Run implements tools.Tool: bad arguments are invalid_params, as on the
// control API.
func (t *AskUserTool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	return runInvalidParams(ctx, t.Typed, raw)
}

func (t *AskUserTool) run(ctx context.Context, args askUserArgs) (string, error) {
	turn, ok := tools.TurnFrom(ctx)
	if !ok || turn.Conversation == "" {
		return "", newErr(CodeUnavailable, "", "ask_user needs a conversation")
	}
	waitCtx, release := withoutDeadline(ctx)
	defer release()
	answers, err := t.broker.AskVia(waitCtx, Route{Conversation: turn.Conversation, Channel: turn.Channel, ChatID: turn.ChatID}, args.Questions, t.budget)
	if err != nil {
		return "", err
	}
	return formatAnswers(args.Questions, answers, t.budget), nil
}

// withoutDeadline keeps ctx's values and cancellation but drops a deadline
// (a tool work timeout): waiting for the owner must not count against it.
func withoutDeadline(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Deadline(); !ok {
		return ctx, func() {}
	}
	detached, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			cancel(cause)
		}
	})
	return detached, func() { stop(); cancel(nil) }
}

func formatAnswers(qs []Question, as []Answer, budget time.Duration) string {
	var b strings.Builder
	for i, a := range as {
		if len(as) > 1 {
			fmt.Fprintf(&b, "Question %d: ", i+1)
		}
		b.WriteString(strings.TrimSpace(qs[i].Question))
		b.WriteString("\n")
		switch a.Status {
		case AnswerGiven:
			switch {
			case a.Choice != "" && a.Text != "":
				fmt.Fprintf(&b, "Owner chose: %s (note: %s)\n", a.Choice, a.Text)
			case a.Choice != "":
				fmt.Fprintf(&b, "Owner chose: %s\n", a.Choice)
			default:
				fmt.Fprintf(&b, "Owner answered: %s\n", a.Text)
			}
		case AnswerTimeout:
			fmt.Fprintf(&b, "The owner did not answer within %s. No option was chosen; do not assume the recommended one.\n", humanDuration(budget))
		case AnswerSuperseded:
			b.WriteString("The owner did not answer: a newer question replaced this one. No option was chosen.\n")
		default:
			b.WriteString("The owner did not answer: the question was cancelled. No option was chosen.\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
