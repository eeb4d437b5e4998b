package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// ToolFunc runs one of the agent's tools by name (the agent's registry).
type ToolFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

// ActionExecutorOptions are the ActionExecutor's dependencies; each
// option kind is available only when its executor is set.
type ActionExecutorOptions struct {
	Gate        Gate
	Injector    *NudgeInjector
	Spawn       *ProactiveSpawn
	Tool        ToolFunc
	OnDelivered DeliveredFunc
	Logger      *slog.Logger
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

// maxToolOutput bounds a tool result shown to the owner.
const maxToolOutput = 4000

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
		r := a.o.Injector.Queue(ctx, Nudge{Action: policy.ActionInject, Message: msg, Session: session, Priority: pd.Priority, Topic: pd.Topic, Reason: "picked: " + opt.Title})
		if !r.Queued {
			return r, ""
		}
		// The pick's own answer is the reply the inject rides on.
		text := a.o.Injector.Modify(session, "")
		r.Delivered = text != ""
		return r, text
	case KindTool:
		if a.o.Tool == nil || opt.Tool == "" {
			return denied(LayerInput, "tool options need a tool runner and a tool name"), ""
		}
		req := policy.Request{Action: policy.ActionNudge, SessionKey: session, Content: "tool " + opt.Tool + " " + string(opt.Args), Priority: pd.Priority, Topic: pd.Topic}
		v := policy.Verdict{Allow: true}
		if a.o.Gate != nil {
			if v = a.o.Gate.Check(ctx, req); !v.Allow {
				return Result{Verdict: v}, ""
			}
		}
		args := json.RawMessage(`{}`)
		var buf bytes.Buffer
		if len(opt.Args) > 0 && json.Compact(&buf, opt.Args) == nil {
			args = buf.Bytes()
		}
		out, err := a.o.Tool(ctx, opt.Tool, args)
		if err != nil {
			return Result{Verdict: v, Error: fmt.Sprintf("tool %s: %v", opt.Tool, err)}, ""
		}
		r := Result{Verdict: v, Delivered: true, Targets: []string{session}}
		if a.o.Gate != nil {
			if r.NudgeID, err = a.o.Gate.RecordFired(ctx, req); err != nil {
				a.o.Logger.Error("sentinel: tool ran but fire not recorded", "err", err)
			}
		}
		if a.o.OnDelivered != nil {
			a.o.OnDelivered(ctx, Delivery{NudgeID: r.NudgeID, Action: req.Action, Session: session, Content: req.Content, Topic: pd.Topic, Priority: pd.Priority})
		}
		if len(out) > maxToolOutput {
			out = out[:maxToolOutput] + "…"
		}
		return r, strings.TrimSpace(out)
	case KindSpawn:
		if a.o.Spawn == nil {
			return denied(LayerInput, "spawn options need the spawner"), ""
		}
		task := opt.Task
		if task == "" {
			task = opt.Title
		}
		r := a.o.Spawn.Dispatch(ctx, SpawnRequest{Task: task, Session: session, Priority: pd.Priority, Topic: pd.Topic, Reason: "picked: " + opt.Title})
		if !r.Delivered {
			return r, ""
		}
		return r, "On it: " + opt.Title + ". I'll report back here."
	}
	return denied(LayerInput, fmt.Sprintf("unknown option kind %q", opt.Kind)), ""
}
