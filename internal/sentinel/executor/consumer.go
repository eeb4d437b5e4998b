package executor

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/raven-agent/raven/internal/sentinel/policy"
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

// execute runs a pick. The menu is claimed while the pick runs (so a second
// message cannot run it twice) and closed only once the pick succeeded; a
// denied or failed pick says why and leaves the menu as it was, so the
// owner can retry.
func (c *DecisionConsumer) execute(ctx context.Context, session string, pd PendingDecision, index int) string {
	retry := strconv.Itoa(index)
	if pd.State == StateAwaitingConfirm {
		retry = "yes"
	}
	if _, err := c.o.Store.Claim(ctx, pd.ID, index); err != nil {
		return "That menu is no longer open."
	}
	opt := pd.Options[index-1]
	var r Result
	var text string
	if c.o.Executor != nil {
		r, text = c.o.Executor.Execute(ctx, session, pd, opt)
	} else {
		r = Result{Verdict: policy.Verdict{Allow: true}, Delivered: true}
	}
	ok := r.Verdict.Allow && r.Error == "" && (r.Delivered || r.Queued)
	if _, err := c.o.Store.Settle(context.WithoutCancel(ctx), pd.ID, ok); err != nil {
		c.o.Logger.Warn("sentinel: menu pick not settled", "decision", pd.ID, "done", ok, "err", err)
	}
	stays := fmt.Sprintf(" The menu stays open: reply %s to try again.", retry)
	switch {
	case !r.Verdict.Allow && r.Verdict.Layer == LayerInput:
		return fmt.Sprintf("I couldn't do %q: %s.", opt.Title, r.Verdict.Reason)
	case !r.Verdict.Allow:
		c.o.Logger.Info("sentinel: menu pick denied", "decision", pd.ID, "index", index, "layer", r.Verdict.Layer, "reason", r.Verdict.Reason)
		return fmt.Sprintf("I can't do %q right now: the nudge policy's %s layer refused it (%s).", opt.Title, r.Verdict.Layer, r.Verdict.Reason) + stays
	case !ok:
		msg := r.Error
		if msg == "" {
			msg = "it did not run"
		}
		return fmt.Sprintf("I couldn't do %q: %s.", opt.Title, msg) + stays
	case c.o.Executor == nil:
		return fmt.Sprintf("Noted: %s.", opt.Title)
	case text != "":
		return text
	}
	return fmt.Sprintf("Done: %s.", opt.Title)
}
