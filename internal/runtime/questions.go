package runtime

import (
	"context"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// buildQuestions opens the durable owner-questions store and registers its
// tool. An answer continues the conversation with an ANSWER-origin turn.
func (r *Runtime) buildQuestions(ctx context.Context, _ Options) error {
	var err error
	r.questions, err = questions.OpenStore(ctx, r.db, questions.StoreOptions{
		Clock: r.clk, Logger: r.log.With("component", "questions"),
		Emit: func(ctx context.Context, kind, conv string, payload any) error {
			_, err := r.events.Append(ctx, kind, conv, payload)
			return err
		},
		Continue:  r.continueAnswer,
		Authority: r.Authority(),
		Leases:    r.auth,
	})
	if err != nil {
		return err
	}
	// A revoked or rotated owner credential cancels its pending questions
	// at once, not at the next read.
	r.auth.OnCredentialChange(r.questions.CredentialChanged)
	// The tool offers itself only where a question can be held (the agent
	// asks its OfferedIn per turn).
	r.toolReg.Register(questions.NewQuestionTool(r.questions))
	// Every turn of an owner conversation bound to a workspace carries the
	// read-only project-membership fact; other conversations carry none.
	r.agent.AddTurnContext(r.membershipLine)
	return nil
}

// membershipLine is the owner-workspace turn's membership fact. It only
// reads: it never enrols, writes into the directory or asks anything.
func (r *Runtime) membershipLine(ctx context.Context, conv string) string {
	f, ok := r.questions.TurnMembership(ctx, conv)
	if !ok {
		return ""
	}
	return f.PromptLine()
}

// Authority is who may answer owner questions and ask_user prompts: the
// auth store's controllers, with their credential generations.
func (r *Runtime) Authority() questions.Authority {
	return questions.Authority{Controllers: r.auth, Credentials: credentialGenerations{r.auth}}
}

// continueAnswer submits the ANSWER-origin turn that continues a
// conversation after its owner answered a durable question, and records
// the run's end on the receipt.
func (r *Runtime) continueAnswer(ctx context.Context, conv, runID string, ans questions.OwnerAnswer) error {
	ch, id, ok := spine.SplitConversationKey(conv)
	if !ok {
		ch, id = "owner", conv
	}
	tk, err := r.scheduler.Submit(spine.TurnRequest{Origin: spine.OriginAnswer, ConversationID: conv, Channel: ch, ChatID: id,
		Content: ans.Content(), Extras: map[string]any{"run_id": runID}})
	if err != nil {
		return err
	}
	r.GoUntilClose("answer-run", func(actx context.Context) error {
		res, err := tk.Wait(actx)
		if err != nil {
			return nil // shutting down: Recover marks it failed at next start
		}
		return r.questions.FinishRun(context.WithoutCancel(actx), runID, res.Err)
	})
	return nil
}

// runTurn is the scheduler's handler: the agent's turn, except that an
// answer's continuation first asks the questions store whether it may
// still run (a native takeover while it waited in the lane wins).
func (r *Runtime) runTurn(ctx context.Context, t *spine.Turn) (string, error) {
	if t.Request.Origin == spine.OriginAnswer {
		runID, _ := t.Request.Extras["run_id"].(string)
		if err := r.questions.BeginRun(ctx, t.Request.Conversation(), runID); err != nil {
			return "", err
		}
	}
	r.prepareMCP(ctx, t)
	return r.agent.RunTurn(ctx, t)
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
