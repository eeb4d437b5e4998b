package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/raven-agent/raven/internal/spine"
)

// ConsumerOptions are the DecisionConsumer's dependencies.
type ConsumerOptions struct {
	Store    *PendingDecisionStore
	Router   *DecisionRouter
	Executor *ActionExecutor
	// Confirm asks "go ahead?" before executing a pick.
	Confirm bool
	Logger  *slog.Logger
}

// DecisionConsumer catches the owner's answer to a discovery menu before
// it reaches the agent loop and turns it into an ActionExecutor call.
type DecisionConsumer struct {
	o ConsumerOptions
}

// NewConsumer returns a consumer.
func NewConsumer(opts ConsumerOptions) *DecisionConsumer {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Router == nil {
		opts.Router = NewRouter(RouterOptions{Logger: opts.Logger})
	}
	return &DecisionConsumer{o: opts}
}

// Hook is the user-inbound hook. handled=true means the message was a pick
// (or a confirmation) and reply is the whole answer: the agent loop must
// not see the message.
func (c *DecisionConsumer) Hook(ctx context.Context, req spine.TurnRequest) (handled bool, reply string) {
	if !req.Origin.UserInbound() || c.o.Store == nil {
		return false, ""
	}
	session := req.Conversation()
	pd, ok, err := c.o.Store.Active(ctx, session)
	if err != nil {
		c.o.Logger.Warn("sentinel: pending decisions unavailable; message goes to the agent", "err", err)
		return false, ""
	}
	if !ok {
		return false, ""
	}
	m, ok := c.o.Router.Route(ctx, pd, req.Content)
	if !ok {
		return false, ""
	}
	c.o.Logger.Info("sentinel: menu reply matched", "decision", pd.ID, "index", m.Index, "confirm", m.Confirm, "cancel", m.Cancel, "via", m.Via, "confidence", m.Confidence)
	switch {
	case m.Cancel:
		if _, err := c.o.Store.Transition(ctx, pd.ID, StateCancelled, 0); err != nil {
			return true, "That menu is no longer open."
		}
		return true, "OK, cancelled."
	case m.Confirm:
		if pd.State != StateAwaitingConfirm || pd.Picked < 1 || pd.Picked > len(pd.Options) {
			return false, ""
		}
		return true, c.execute(ctx, session, pd, pd.Picked)
	}
	if c.o.Confirm {
		if _, err := c.o.Store.Transition(ctx, pd.ID, StateAwaitingConfirm, m.Index); err != nil {
			return true, "That menu is no longer open."
		}
		return true, fmt.Sprintf("You picked %d: %s. Reply yes to go ahead or no to cancel.", m.Index, pd.Options[m.Index-1].Title)
	}
	return true, c.execute(ctx, session, pd, m.Index)
}

func (c *DecisionConsumer) execute(ctx context.Context, session string, pd PendingDecision, index int) string {
	// Close the menu first so a second message cannot run the pick twice.
	if _, err := c.o.Store.Transition(ctx, pd.ID, StateDone, index); err != nil {
		return "That menu is no longer open."
	}
	opt := pd.Options[index-1]
	if c.o.Executor == nil {
		return fmt.Sprintf("Noted: %s.", opt.Title)
	}
	r, text := c.o.Executor.Execute(ctx, session, pd, opt)
	switch {
	case r.Verdict.Layer == LayerInput:
		return fmt.Sprintf("I couldn't do %q: %s", opt.Title, r.Verdict.Reason)
	case !r.Verdict.Allow && r.Verdict.Layer != "":
		return fmt.Sprintf("Noted %q, but I'm holding off for now (%s).", opt.Title, r.Verdict.Reason)
	case r.Error != "":
		return fmt.Sprintf("I couldn't do %q: %s", opt.Title, r.Error)
	case text != "":
		return text
	}
	return fmt.Sprintf("Done: %s.", opt.Title)
}
