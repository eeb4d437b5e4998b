package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// ToolRunner runs one of the agent's tools by name with JSON arguments and
// returns its output. It is the seam to the agent's tool registry: the
// Sentinel does not import the agent.
type ToolRunner func(ctx context.Context, name string, args json.RawMessage) (string, error)

// ActionExecutorOptions are the ActionExecutor's dependencies; each
// option kind is available only when its executor is set.
type ActionExecutorOptions struct {
	Gate     Gate
	Injector *NudgeInjector
	Spawn    *ProactiveSpawn
	// Tools runs KindTool options.
	Tools ToolRunner
	// OnDelivered sees a tool pick's output once it ran (it is this
	// turn's reply), like any delivery.
	OnDelivered DeliveredFunc
	Clock       clock.Clock
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
	if opts.Clock == nil {
		opts.Clock = clock.Real()
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
	case KindTool:
		return a.runTool(ctx, session, pd, opt)
	}
	return denied(LayerInput, fmt.Sprintf("unknown option kind %q", opt.Kind)), ""
}

// runTool runs a KindTool pick through the policy: checked as the owner's
// answer, charged only once the tool succeeded, its output the reply.
func (a *ActionExecutor) runTool(ctx context.Context, session string, pd PendingDecision, opt Option) (Result, string) {
	if a.o.Tools == nil {
		return denied(LayerInput, "tool options need the agent's tools"), ""
	}
	if strings.TrimSpace(opt.Tool) == "" {
		return denied(LayerInput, "the option names no tool"), ""
	}
	args := json.RawMessage(`{}`)
	if len(opt.Args) > 0 {
		// Compact: the stored menu is indented, and the dedup key should
		// not depend on layout.
		var b bytes.Buffer
		if err := json.Compact(&b, opt.Args); err != nil {
			return denied(LayerInput, fmt.Sprintf("the arguments for %s are not JSON: %v", opt.Tool, err)), ""
		}
		args = b.Bytes()
	}
	req := policy.Request{Action: policy.ActionTool, SessionKey: session, Content: "run " + opt.Tool + " " + string(args),
		Priority: pd.Priority, Topic: pd.Topic, Answer: true}
	v := policy.Verdict{Allow: true}
	if a.o.Gate != nil {
		if v = a.o.Gate.Check(ctx, req); !v.Allow {
			return Result{Verdict: v}, ""
		}
	}
	if _, ok := tools.TurnFrom(ctx); !ok {
		// A tool runs for the owner who picked it: tools that act on "this
		// conversation" find it as in an agent turn.
		ch, chatID, _ := spine.SplitConversationKey(session)
		ctx = tools.WithTurn(ctx, tools.TurnInfo{Origin: spine.OriginUser, Conversation: session, Channel: ch, ChatID: chatID})
	}
	out, err := a.o.Tools(ctx, opt.Tool, args)
	if err != nil {
		a.o.Logger.Warn("sentinel: picked tool failed; not charged", "tool", opt.Tool, "err", err)
		return Result{Verdict: v, Error: fmt.Sprintf("%s: %v", opt.Tool, err)}, ""
	}
	text := strings.TrimSpace(out)
	if text == "" {
		text = "Done: " + opt.Title + "."
	}
	res := Result{Verdict: v, Delivered: true, Targets: []string{session}, Note: "ran tool " + opt.Tool}
	if a.o.Gate != nil {
		if res.NudgeID, err = a.o.Gate.RecordFired(ctx, req); err != nil {
			a.o.Logger.Error("sentinel: picked tool ran but fire not recorded", "err", err)
		}
	}
	if a.o.OnDelivered != nil {
		a.o.OnDelivered(ctx, Delivery{NudgeID: res.NudgeID, Action: req.Action, Session: session, Content: text,
			Topic: pd.Topic, Priority: pd.Priority, At: a.o.Clock.Now()})
	}
	return res, text
}
