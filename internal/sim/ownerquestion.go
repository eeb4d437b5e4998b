package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

var ownerQuestionSection = section{
	name:  "owner_question",
	title: "Owner questions — asked in the TUI, answered from the tablet, reset and restart",
	blurb: "Thursday morning. The laptop TUI is an owner conversation bound to a project directory " +
		"(conversations.open). The model leaves one durable question with conversation_question and " +
		"carries on. The tablet takes control and answers through input_answer; the same answer again " +
		"returns the same receipt, a different one is refused. A reset rotates the incarnation, and a " +
		"restart cancels the question still waiting.",
	run: runOwnerQuestion,
}

const (
	reviewQ = "How should I review your changes in this project?"
	styleQ  = "Do you prefer short or detailed commit messages?"
)

func runOwnerQuestion(ctx context.Context, e *env) error {
	e.clk.Set(at(3, 9, 0))
	leave := func(q string, opts ...string) llm.Turn {
		return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "conversation_question", Arguments: jsonArgs(map[string]any{"question": q, "options": opts})}}}
	}
	script := llm.NewScripted([]llm.Turn{
		leave(reviewQ, "Line by line", "Summary first"),
		{Content: "I've left you a question about the review style; I'll start once you answer."},
		{Content: "Summary first, then. Starting with the overview of the change."},
		leave(styleQ, "Short", "Detailed"),
		{Content: "Question left; carrying on with the tests meanwhile."},
	})
	model := &narrated{inner: script, e: e, turns: true}
	b := build{model: model, services: runtime.ServiceRecovery}
	rt, err := e.newRuntime(ctx, b)
	if err != nil {
		return err
	}
	project := filepath.Join(filepath.Dir(e.paths.Root), "owner-project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return err
	}
	operator, tablet, err := ownerPrincipals(ctx, rt)
	if err != nil {
		return err
	}
	conv := spine.ConversationKey(channels.TUIChannel, laptop)
	st := rt.Questions()

	// 1. The TUI opens its owner conversation in the project directory.
	open, err := st.OpenOwner(ctx, operator, conv, project)
	if err != nil {
		return fmt.Errorf("conversations.open: %w", err)
	}
	e.emit(Event{Kind: "conversation.open", Label: "tui", Text: fmt.Sprintf("conversations.open %s → owner, incarnation %s", conv, open.Incarnation),
		Why:  "an authenticated operator session working in an existing directory is an owner conversation: the only kind that can hold a question",
		Data: map[string]any{"conversation": conv, "incarnation": open.Incarnation, "created": open.Created, "can_hold_question": open.CanHoldQuestion}})
	if !open.Created || !open.CanHoldQuestion {
		return fmt.Errorf("conversations.open: created=%v can_hold=%v (%s)", open.Created, open.CanHoldQuestion, open.HoldReason)
	}
	if _, err := e.attach(ctx, rt, conv, screen{e}); err != nil {
		return err
	}

	// 2. A turn: the model sees the membership fact and leaves a question.
	first, err := e.askedTurn(ctx, rt, operator, conv, "Please review my branch when you get a chance.", reviewQ)
	if err != nil {
		return err
	}
	if sys := script.Requests()[0].Messages[0].Content; !strings.Contains(sys, "Project membership of "+project+": not_member") {
		return fmt.Errorf("the owner turn's prompt lacks the membership fact:\n%s", sys)
	}
	if tools := script.Requests()[0].Tools; !hasTool(tools, "conversation_question") {
		return fmt.Errorf("conversation_question was not offered in the owner conversation")
	}
	e.emit(Event{Kind: "turn.fact", Label: "agent", Text: "prompt carries: Project membership of " + project + ": not_member",
		Why:  "read-only context for an owner-workspace turn: nothing is enrolled or written, no questionnaire follows",
		Data: map[string]any{"status": string(questions.NotMember)}})
	e.tuiShows(first)

	// 3. The tablet is not the controller yet: its answer is refused.
	pick := questions.AnswerParams{Conversation: conv, RequestID: first.Request.RequestID, Incarnation: first.Incarnation,
		Revision: first.Revision, OptionID: first.Request.Options[1].OptionID}
	if _, err := st.Answer(ctx, tablet, pick); questions.CodeOf(err) != questions.CodeForbidden {
		return fmt.Errorf("the tablet answered without Take Control: %v", err)
	} else {
		e.emit(Event{Kind: "question.refused", Label: "tablet", Text: "input_answer refused: " + err.Error(),
			Data: map[string]any{"code": string(questions.CodeOf(err))}})
	}
	take, err := st.Take(ctx, tablet, conv, 0)
	if err != nil {
		return fmt.Errorf("control.take: %w", err)
	}
	e.emit(Event{Kind: "control.take", Label: "tablet", Text: fmt.Sprintf("Take Control of %s: lease until %s", conv, take.Lease.ExpiresAt.Format("15:04")),
		Why:  "a control device answers only while it holds the lease; authority is re-checked on every answer",
		Data: map[string]any{"conversation": conv, "holder": take.Lease.Holder}})

	// 4. The answer: receipt and continuation run committed together.
	rec, err := st.Answer(ctx, tablet, pick)
	if err != nil {
		return fmt.Errorf("input_answer: %w", err)
	}
	e.emit(Event{Kind: "question.answered", Label: "tablet", Text: fmt.Sprintf("input_answer %q → accepted, receipt %s, run %s", first.Request.Options[1].Label, short(rec.ReceiptID), short(rec.RunID)),
		Why:  "accepted means the answer and its continuation run were stored; the run is an ANSWER-origin turn",
		Data: map[string]any{"receipt": rec.ReceiptID, "run_id": rec.RunID, "status": rec.Status, "by": rec.By}})
	if _, err := e.expect(ctx, "the continuation's reply", func(m spine.Message) bool {
		return m.Reply && strings.Contains(m.Content, "Summary first")
	}); err != nil {
		return err
	}
	dup, err := st.Answer(ctx, tablet, pick)
	if err != nil || dup.ReceiptID != rec.ReceiptID || dup.RunID != rec.RunID {
		return fmt.Errorf("duplicate answer: %+v, %v (want receipt %s)", dup, err, rec.ReceiptID)
	}
	e.emit(Event{Kind: "question.duplicate", Label: "tablet", Text: "the same answer again → the same receipt " + short(dup.ReceiptID) + ", no second run",
		Data: map[string]any{"receipt": dup.ReceiptID, "same": true}})
	other := pick
	other.OptionID = first.Request.Options[0].OptionID
	_, err = st.Answer(ctx, tablet, other)
	if questions.CodeOf(err) != questions.CodeConflict {
		return fmt.Errorf("a different answer to the consumed question got %v, want a conflict", err)
	}
	e.emit(Event{Kind: "question.conflict", Label: "tablet", Text: "a different answer → refused: " + err.Error(),
		Why:  "the request is consumed; the client must read the question again, never resubmit",
		Data: map[string]any{"code": string(questions.CodeOf(err))}})

	// 5. Reset rotates the incarnation.
	reset, err := st.ResetAs(ctx, operator, conv)
	if err != nil {
		return fmt.Errorf("conversations.reset: %w", err)
	}
	if reset.Incarnation == open.Incarnation {
		return fmt.Errorf("reset kept incarnation %s", reset.Incarnation)
	}
	e.emit(Event{Kind: "conversation.reset", Label: "tui", Text: fmt.Sprintf("conversations.reset → incarnation %s → %s", short(open.Incarnation), short(reset.Incarnation)),
		Data: map[string]any{"old": open.Incarnation, "new": reset.Incarnation}})

	// 6. Another question, then a restart: Recover cancels it, replays nothing.
	second, err := e.askedTurn(ctx, rt, operator, conv, "Go ahead and prepare the commit.", styleQ)
	if err != nil {
		return err
	}
	e.tuiShows(second)
	e.tl.note("The gateway restarts before anyone answers.")
	if err := rt.Close(ctx); err != nil {
		return err
	}
	rt, err = e.newRuntime(ctx, b)
	if err != nil {
		return err
	}
	after, err := rt.Questions().Get(ctx, operator, questions.GetParams{Conversation: conv, RequestID: second.Request.RequestID})
	if err != nil {
		return fmt.Errorf("input_get after restart: %w", err)
	}
	if after.Receipt == nil || after.Receipt.Status != "cancelled" || after.Receipt.Reason != "restart" {
		return fmt.Errorf("after restart the question is %+v, want cancelled (restart)", after.Receipt)
	}
	e.emit(Event{Kind: "question.recovered", Label: "runtime", Text: fmt.Sprintf("restart → %q cancelled (reason %s); nothing re-executed", styleQ, after.Receipt.Reason),
		Data: map[string]any{"status": after.Receipt.Status, "reason": after.Receipt.Reason, "model_calls": len(script.Requests())}})
	if n := len(script.Requests()); n != 5 {
		return fmt.Errorf("model calls = %d, want 5 (nothing replayed after restart)", n)
	}
	return nil
}

// ownerPrincipals are the local operator (as the TUI connects) and a
// control device, the tablet.
func ownerPrincipals(ctx context.Context, rt *runtime.Runtime) (auth.Principal, auth.Principal, error) {
	a := rt.Auth()
	if _, err := a.EnsureOperatorToken(ctx, rt.Paths().OperatorToken()); err != nil {
		return auth.Principal{}, auth.Principal{}, err
	}
	tok, err := auth.ReadTokenFile(rt.Paths().OperatorToken())
	if err != nil {
		return auth.Principal{}, auth.Principal{}, err
	}
	op, err := a.Verify(ctx, tok)
	if err != nil {
		return auth.Principal{}, auth.Principal{}, err
	}
	devTok, err := a.Create(ctx, auth.RoleDevice, "tablet", false)
	if err != nil {
		return auth.Principal{}, auth.Principal{}, err
	}
	dev, err := a.Verify(ctx, devTok)
	return op, dev, err
}

// askedTurn runs one owner turn in which the model leaves question, and
// returns the pending snapshot as input_get gives it.
func (e *env) askedTurn(ctx context.Context, rt *runtime.Runtime, p auth.Principal, conv, text, question string) (questions.Snapshot, error) {
	ch, id, _ := spine.SplitConversationKey(conv)
	_, t, err := e.inbound(ctx, rt.Inbound(), ch, id, text)
	if err != nil {
		return questions.Snapshot{}, err
	}
	if err := finishTurn(ctx, e, t, "the owner turn"); err != nil {
		return questions.Snapshot{}, err
	}
	snap, err := rt.Questions().Get(ctx, p, questions.GetParams{Conversation: conv})
	if err != nil {
		return questions.Snapshot{}, fmt.Errorf("input_get: %w", err)
	}
	if snap.Status != "pending" || snap.Request == nil || snap.Request.Question != question {
		return questions.Snapshot{}, fmt.Errorf("after the turn the question is %+v, want %q pending", snap, question)
	}
	return snap, nil
}

// tuiShows prints the question as the TUI draws it after input_requested:
// from the input_get snapshot, with its incarnation and revision.
func (e *env) tuiShows(s questions.Snapshot) {
	var b strings.Builder
	fmt.Fprintf(&b, "/question → %s", quote(s.Request.Question))
	for i, o := range s.Request.Options {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, o.Label)
	}
	raw, _ := json.Marshal(s)
	e.emit(Event{Kind: "tui.question", Label: "tui", Text: b.String(),
		Why:  "the TUI fetches the snapshot on input_requested; /question answer N binds to this request, incarnation and revision",
		Data: map[string]any{"request_id": s.Request.RequestID, "revision": s.Revision, "options": len(s.Request.Options), "snapshot": json.RawMessage(raw)}})
}

func hasTool(ts []llm.Tool, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}

// short is the first block of a UUID, enough to tell two apart.
func short(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}
