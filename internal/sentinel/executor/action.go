package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// ActionExecutorOptions are the ActionExecutor's dependencies; each
// option kind is available only when its executor is set.
type ActionExecutorOptions struct {
	Gate     Gate
	Injector *NudgeInjector
	Spawn    *ProactiveSpawn
	Logger   *slog.Logger
}

// ActionExecutor runs a picked menu option. Every path passes the policy and
// records the fire only once it happened.
type ActionExecutor struct {
	o ActionExecutorOptions
}

// NewActionExecutor returns an executor.
func NewActionExecutor(opts ActionExecutorOptions) *ActionExecutor {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &ActionExecutor{o: opts}
}

// Execute runs opt for session and returns the result and the text to show
// the owner.
func (a *ActionExecutor) Execute(ctx context.Context, session string, pd PendingDecision, opt Option) (Result, string) {
	switch opt.Kind {
	case KindReply:
		if a.o.Injector == nil {
			return denied(LayerInput, "reply options need the injector"), ""
		}
		msg := opt.Reply
		if msg == "" {
			msg = opt.Title
		}
		r := a.o.Injector.Queue(ctx, Nudge{Action: policy.ActionInject, Message: msg, Session: session, Priority: pd.Priority, Topic: pd.Topic, Reason: "picked: " + opt.Title, Answer: true})
		if !r.Queued {
			return r, ""
		}
		// The pick's own answer is the reply the inject rides on; like any
		// inject it was charged when queued, is reported once the turn
		// settles with that reply delivered, and is requeued if it is not.
		text := a.o.Injector.Modify(session, "")
		if text == "" {
			r.Note = "queued for the next reply"
			return r, "Noted: " + opt.Title + ". It comes with my next reply."
		}
		r.Note = "rides this turn's reply"
		return r, text
	case KindSpawn:
		if a.o.Spawn == nil {
			return denied(LayerInput, "spawn options need the spawner"), ""
		}
		task := opt.Task
		if task == "" {
			task = opt.Title
		}
		r := a.o.Spawn.Dispatch(ctx, SpawnRequest{Task: task, Session: session, Priority: pd.Priority, Topic: pd.Topic, Reason: "picked: " + opt.Title, Answer: true})
		if !r.Delivered {
			return r, ""
		}
		return r, "On it: " + opt.Title + ". I'll report back here."
	}
	return denied(LayerInput, fmt.Sprintf("unknown option kind %q", opt.Kind)), ""
}
