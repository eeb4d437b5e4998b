package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

var askUserSection = section{
	name:  "ask_user",
	title: "Asking the owner — ask_user answered on the phone, and one left unanswered",
	blurb: "Wednesday evening. Mid-turn the model calls ask_user: the real questions broker pauses " +
		"the turn, hands clarify.request to an attached TUI and renders the question as text on chat " +
		"channels. The owner's next message in that conversation is the answer, routed by the " +
		"gateway's inbound dispatcher. The wait has one budget (tools.ask_user.timeout) on the virtual clock.",
	run: runAskUser,
}

var (
	dinnerQ = questions.Question{
		Question: "Where shall I book Friday dinner with Sam?", Header: "Dinner",
		Choices:     []string{"Luigi's, Italian, 19:30", "Sakura, Japanese, 20:00", "Green Fork, vegetarian, 19:00"},
		Recommended: "Luigi's, Italian, 19:30",
	}
	boilerQ = questions.Question{
		Question: "The engineer can service the boiler Monday 08:00 or Tuesday 13:00. Which?", Header: "Boiler",
		Choices: []string{"Monday 08:00", "Tuesday 13:00"}, Recommended: "Monday 08:00",
	}
)

const (
	phone  = "owner-phone"
	laptop = "laptop"
)

func runAskUser(ctx context.Context, e *env) error {
	e.clk.Set(at(2, 18, 10))
	ask := func(q questions.Question) llm.Turn {
		return llm.Turn{ToolCalls: []llm.ToolCall{{Name: "ask_user", Arguments: jsonArgs(map[string]any{"questions": []questions.Question{q}})}}}
	}
	script := llm.NewScripted([]llm.Turn{
		ask(dinnerQ),
		{Content: "Sakura it is: Friday at 20:00 for you and Sam. I'll put it in your notes if you like."},
		ask(boilerQ),
		{Content: "You didn't answer, so I haven't picked a slot: Monday 08:00 and Tuesday 13:00 are both still open. Tell me which when you're up."},
	})
	model := &narrated{inner: script, e: e, full: map[string]bool{"ask_user": true}}
	rt, err := e.newRuntime(ctx, build{model: model, real: []string{"telegram"}})
	if err != nil {
		return err
	}
	asked := make(chan questions.ClarifyRequest, 4)
	tui := spine.ConversationKey(channels.TUIChannel, laptop)
	if _, err := e.attach(ctx, rt, tui, tuiScreen{screen: screen{e}, conv: tui, asked: asked}); err != nil {
		return err
	}
	disp := rt.Inbound()

	// 1. Answered on the phone: the owner's next telegram message is the answer.
	_, t, err := e.inbound(ctx, disp, "telegram", phone, "Can you book dinner with Sam on Friday?")
	if err != nil {
		return err
	}
	if _, err := e.expect(ctx, "the dinner question on telegram", func(m spine.Message) bool {
		return m.Channel == "telegram" && !m.Reply
	}); err != nil {
		return err
	}
	e.clk.Advance(3 * time.Minute)
	out, _, err := e.inbound(ctx, disp, "telegram", phone, "2")
	if err != nil {
		return err
	}
	if out != channels.Answered {
		return fmt.Errorf("the owner's answer was %s, not routed to the pending question", out)
	}
	if err := finishTurn(ctx, e, t, "the dinner turn"); err != nil {
		return err
	}
	if got := lastToolResult(script); !strings.Contains(got, "Owner chose: "+dinnerQ.Choices[1]) {
		return fmt.Errorf("the model was told %q, not the owner's choice %q", got, dinnerQ.Choices[1])
	}

	// 2. Unanswered: the owner asks from the laptop TUI and goes to bed.
	e.clk.Set(at(2, 22, 40))
	_, t, err = e.inbound(ctx, disp, channels.TUIChannel, laptop, "Sort out the boiler service for next week, I'm off to bed.")
	if err != nil {
		return err
	}
	req, err := recv(ctx, e, asked, "the boiler question")
	if err != nil {
		return err
	}
	budget := e.cfg.Tools.AskUser.Timeout.D()
	e.tl.note("Nobody answers. The virtual clock moves on by the ask_user budget (%s).", fmtDur(budget))
	// The broker armed its budget timer before it sent clarify.request,
	// so this advance is what ends the wait.
	e.clk.Advance(budget)
	if err := finishTurn(ctx, e, t, "the boiler turn"); err != nil {
		return err
	}
	if got := lastToolResult(script); !strings.Contains(got, "did not answer") {
		return fmt.Errorf("after the timeout the model was told %q", got)
	}

	// 3. The late answer: the laptop TUI wakes and sends clarify.respond.
	e.clk.Advance(4 * time.Minute)
	conv := tui
	choice := 0
	in := questions.ClarifyRespondParams{Conversation: conv, Batch: req.Batch, Choice: &choice}
	params, err := json.Marshal(in)
	if err != nil {
		return err
	}
	e.emit(Event{Kind: api.ClarifyRespond.Name(), Label: "owner (tui)", Text: api.ClarifyRespond.Name() + " " + string(params),
		Data: map[string]any{"conversation": conv, "params": json.RawMessage(params)}})
	h := &questions.ClarifyHandler{Broker: rt.Broker()}
	_, err = h.Respond(ctx, auth.Principal{Name: "operator", Role: auth.RoleOperator}, in)
	if !errors.Is(err, questions.ErrExpired) {
		return fmt.Errorf("a late answer got %v, want an expired refusal", err)
	}
	e.emit(Event{Kind: "clarify.expired", Label: "broker", Text: "refused: " + err.Error(),
		Why:  "the call already returned “did not answer” to the model; a late pick must not be mistaken for an answer to anything newer",
		Data: map[string]any{"code": questions.CodeOf(err), "error": err.Error()}})
	return nil
}

// inbound hands an owner's channel message to the gateway's dispatcher, as a
// channel receiver would, and prints what the dispatcher did with it.
func (e *env) inbound(ctx context.Context, d *channels.Dispatcher, channel, chatID, text string) (channels.Outcome, *spine.Ticket, error) {
	e.emit(Event{Kind: "owner.message", Label: "owner", Text: "→ " + channel + ":" + chatID + "  " + quote(text),
		Data: map[string]any{"channel": channel, "chat_id": chatID, "content": text}})
	out, t, err := d.Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: channel, ChatID: chatID, Content: text})
	if err != nil {
		return out, t, err
	}
	e.emitDispatch(spine.ConversationKey(channel, chatID), out)
	return out, t, nil
}

func (e *env) emitDispatch(conv string, out channels.Outcome) {
	var what string
	switch out {
	case channels.Answered:
		what = "a question is pending on " + conv + " → this message is its answer; no new turn"
	case channels.Appended:
		what = "no turn running on " + conv + " → new turn (APPEND)"
	case channels.Injected:
		what = "a turn is running on " + conv + " → handed to its mailbox (INJECT)"
	default:
		what = "consumed by a hook"
	}
	e.emit(Event{Kind: "inbound.dispatch", Label: "inbound", Text: out.String() + ": " + what,
		Data: map[string]any{"conversation": conv, "outcome": out.String()}})
}

// finishTurn waits for a dispatched turn and fails on a turn error.
func finishTurn(ctx context.Context, e *env, t *spine.Ticket, what string) error {
	if t == nil {
		return fmt.Errorf("%s: no turn was submitted", what)
	}
	res, err := e.wait(ctx, what, t)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("%s: %w", what, res.Err)
	}
	return nil
}

// recv waits (in real time, bounded) for the next value on ch.
func recv[T any](ctx context.Context, e *env, ch <-chan T, what string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, e.step)
	defer cancel()
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// lastToolResult is the newest tool message the model was sent: the check
// that the scripted reply matches what the runtime really fed it.
func lastToolResult(s *llm.Scripted) string {
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		msgs := reqs[i].Messages
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == llm.RoleTool {
				return msgs[j].Content
			}
		}
	}
	return ""
}

// askUserArgs renders ask_user arguments as the questions the model asked.
func askUserArgs(raw string) (string, bool) {
	var args struct {
		Questions []questions.Question `json:"questions"`
	}
	if err := json.Unmarshal([]byte(raw), &args); err != nil || len(args.Questions) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, q := range args.Questions {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(quote(q.Question))
		if len(q.Choices) > 0 {
			b.WriteString("\nchoices: " + strings.Join(q.Choices, " | "))
		}
		if q.Recommended != "" {
			b.WriteString("\nrecommended: " + q.Recommended)
		}
	}
	return b.String(), true
}
