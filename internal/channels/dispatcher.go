package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/raven-agent/raven/internal/spine"
)

// Inbound is the seam a receiving channel calls with each message a person
// sent. The gateway wires it to (*Dispatcher).Inbound.
type Inbound func(ctx context.Context, req spine.TurnRequest) error

// Hook sees genuine user input before it reaches the agent loop. A hook
// that handles the message (the task-discovery pick consumer catching "2"
// or "/pick 2") returns handled=true and, optionally, a reply to post back.
type Hook func(ctx context.Context, req spine.TurnRequest) (handled bool, reply string)

// Outcome says what the dispatcher did with an inbound message.
type Outcome int

const (
	// Appended queued a new turn (no turn was in flight).
	Appended Outcome = iota
	// Injected handed the message to the running turn's mailbox.
	Injected
	// Answered routed the message to the conversation's pending ask_user question.
	Answered
	// Hooked means a hook consumed the message; it never reached the agent.
	Hooked
)

func (o Outcome) String() string {
	switch o {
	case Appended:
		return "appended"
	case Injected:
		return "injected"
	case Answered:
		return "answered"
	case Hooked:
		return "hooked"
	}
	return "unknown"
}

// DispatcherDeps are the seams of the gateway's inbound dispatch.
type DispatcherDeps struct {
	// HasInflight reports a running turn (Scheduler.HasInflight).
	HasInflight func(conversation string) bool
	// Submit queues a turn (Scheduler.Submit).
	Submit func(req spine.TurnRequest) (*spine.Ticket, error)
	// PendingQuestion reports an ask_user question awaiting this
	// conversation's answer; nil when there is no broker.
	PendingQuestion func(conversation string) bool
	// AnswerQuestion hands text to the pending question; false when the
	// question went away meanwhile (answered elsewhere, timed out).
	AnswerQuestion func(conversation, text string) bool
	// Post delivers a hook's reply to the source channel (Hub.Post).
	Post func(ctx context.Context, m spine.Message) error
	// Hooks run in order on user input that is not a question answer.
	Hooks []Hook
	Log   *slog.Logger
}

// Dispatcher is the gateway inbound dispatch of seed 001 §13: an answer to
// a pending ask_user question first, then the user-inbound hooks, then
// INJECT into a running turn or APPEND a new one.
type Dispatcher struct {
	d DispatcherDeps
}

// ErrEmptyMessage refuses an inbound message with no content.
var ErrEmptyMessage = errors.New("channels: empty inbound message")

// NewDispatcher checks the required seams and returns a dispatcher.
func NewDispatcher(d DispatcherDeps) (*Dispatcher, error) {
	if d.HasInflight == nil || d.Submit == nil {
		return nil, errors.New("channels: dispatcher needs HasInflight and Submit")
	}
	if (d.PendingQuestion == nil) != (d.AnswerQuestion == nil) {
		return nil, errors.New("channels: dispatcher needs both PendingQuestion and AnswerQuestion, or neither")
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{d: d}, nil
}

// Inbound adapts Dispatch to the Inbound seam channels call.
func (d *Dispatcher) Inbound(ctx context.Context, req spine.TurnRequest) error {
	_, _, err := d.Dispatch(ctx, req)
	return err
}

// Dispatch routes one message a person sent. The ticket is nil unless a
// turn was submitted (Appended or Injected).
func (d *Dispatcher) Dispatch(ctx context.Context, req spine.TurnRequest) (Outcome, *spine.Ticket, error) {
	if strings.TrimSpace(req.Content) == "" {
		return 0, nil, ErrEmptyMessage
	}
	// Inbound from a channel is a person by definition; a channel cannot
	// claim a proactive origin and dodge the user-only INJECT rule.
	req.Origin = spine.OriginUser
	conv := req.Conversation()
	log := d.d.Log

	// A turn blocked on ask_user waits for this message; starting or
	// injecting a turn instead would leave it hanging until its timeout.
	// A "/" command is never an answer: it stays a command.
	if d.d.PendingQuestion != nil && !isCommand(req.Content) && d.d.PendingQuestion(conv) {
		if d.d.AnswerQuestion(conv, req.Content) {
			log.Debug("inbound answered pending question", "conversation", conv)
			return Answered, nil, nil
		}
		log.Debug("pending question vanished before the answer; dispatching as a message", "conversation", conv)
	}

	for i, h := range d.d.Hooks {
		handled, reply := h(ctx, req)
		if !handled {
			continue
		}
		log.Debug("inbound consumed by hook", "conversation", conv, "hook", i)
		if reply != "" && d.d.Post != nil {
			m := spine.Message{Channel: req.Channel, ChatID: req.ChatID, Content: reply, Origin: spine.OriginUser, Reply: true}
			if err := d.d.Post(ctx, m); err != nil {
				return Hooked, nil, fmt.Errorf("channels: post hook reply to %s: %w", conv, err)
			}
		}
		return Hooked, nil, nil
	}

	out := Appended
	req.Busy = spine.Append
	if d.d.HasInflight(conv) {
		// The running turn drains the mailbox at its next tool-loop step;
		// if it never does, the scheduler turns the inject into an
		// appended turn, so choosing INJECT here can never lose a message.
		out, req.Busy = Injected, spine.Inject
	}
	t, err := d.d.Submit(req)
	if err != nil {
		return out, nil, fmt.Errorf("channels: submit %s (%s): %w", conv, out, err)
	}
	log.Debug("inbound submitted", "conversation", conv, "busy", req.Busy.String())
	return out, t, nil
}

func isCommand(s string) bool { return strings.HasPrefix(strings.TrimLeft(s, " \t"), "/") }
