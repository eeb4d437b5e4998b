package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/memindex"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// buildSentinel builds the Sentinel over the data dir and plugs it into the
// agent loop: the injector as a response modifier (settled by the turn's
// delivery), the discovery-menu consumer as a user-inbound hook, and the
// nudge_feedback tool. Its nudges, menus and spawn results go where the
// runtime's one resolver says. The loops run only with ServiceSentinel.
func (r *Runtime) buildSentinel(_ context.Context, _ Options) error {
	sys, err := sentinel.NewSystem(sentinel.SystemOptions{
		Paths: r.paths.SentinelPaths(), Config: r.cfg.Sentinel, Provider: r.planner,
		Post:         r.hub.Post,
		Targets:      r.sentinelTargets,
		HasOutlet:    r.hub.Has,
		Sessions:     r.sessions.Active,
		LastActivity: r.sessions.LastActivity,
		Messages:     r.sessions.Since,
		// A spawn's result goes through the dispatcher like any nudge:
		// into the owner's session and the feedback log.
		RunAgent: func(ctx context.Context, task string, done executor.SpawnDone) error {
			// Ambient work: charged to the Sentinel and held to its caps.
			return r.subagents.Run(llm.WithCallTag(ctx, llm.CallTag{Origin: string(spine.OriginSentinel)}), task, done)
		},
		Tools: r.runPickedTool,
		// A menu shows "(runs NAME)", not the arguments, so picking it is no
		// consent to side effects: only tools that read are offered.
		ToolNames: func() []sentinel.ToolInfo {
			return sentinel.ToolInfosFrom(r.toolReg, menuToolsExcluded()...)
		},
		OnDelivered: r.rememberNudge,
		OnTick: func(rec sentinel.TickRecord) {
			r.settleSentinelTick(rec)
			r.emit("sentinel.tick", rec.Target, rec)
			if rec.Allowed != nil && !*rec.Allowed {
				r.emit("policy.denied", rec.Target, map[string]any{"layer": rec.Layer, "reason": rec.VerdictReason, "action": rec.Action})
			}
		},
		Getenv: os.Getenv,
		Clock:  r.clk, Logger: r.log,
	})
	if err != nil {
		return err
	}
	r.sentinel = sys
	r.agent.AddResponseModifier(sys.Injector.Modify)
	// The modifier only puts injects in flight; the turn's delivery
	// decides whether they are charged or requeued.
	r.observeTurns(nil, func(req spine.TurnRequest, res spine.Result) {
		sys.Injector.SettleTurn(req, r.replyReached(req, res))
	})
	r.agent.AddInboundHook(sys.Consumer.Hook)
	r.toolReg.Register(sys.FeedbackTool())
	return nil
}

// runPickedTool runs a discovery menu's tool option through the agent's
// tools registry — the same schema validation and work timeout a model's
// tool call gets. The Sentinel's policy already passed the pick.
func (r *Runtime) runPickedTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	if d := r.cfg.Agent.ToolTimeout.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	out, err := r.toolReg.Run(ctx, llm.ToolCall{Name: name, Arguments: string(args)})
	if err != nil {
		return "", fmt.Errorf("tool %s: %w", name, err)
	}
	return out, nil
}

// sentinelTargets is the Sentinel's view of Resolve: a session asks for
// itself; no session asks for the owner wherever they are.
func (r *Runtime) sentinelTargets(sess string) []executor.Target {
	ch, id, _ := spine.SplitConversationKey(sess)
	ts := r.Resolve(ch, id)
	out := make([]executor.Target, len(ts))
	for i, t := range ts {
		out[i] = executor.Target{Channel: t.Channel, ChatID: t.ChatID}
	}
	return out
}

// startSentinel runs the tick and defer loops when sentinel.enabled; they
// stop when ctx or the runtime ends. Off, only the feedback log is trimmed.
func (r *Runtime) startSentinel(ctx context.Context) {
	cfg := r.cfg.Sentinel
	if !cfg.Enabled {
		r.log.Info("sentinel: off (sentinel.enabled=false); queued injects, menus and feedback still work")
		r.startFeedbackTrim()
		return
	}
	sys := r.sentinel
	r.Go("sentinel", func(svcCtx context.Context) error {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(svcCtx, cancel)
		defer stop()
		sys.Runner.Start(runCtx)
		<-runCtx.Done()
		sys.Runner.Stop()
		return nil
	})
	r.log.Info("sentinel: started", "interval", cfg.Interval.D().String())
}

// startFeedbackTrim trims feedback.jsonl hourly when the tick loop (which
// trims it otherwise) does not run here: cron fires still append to it.
func (r *Runtime) startFeedbackTrim() {
	if !r.services.Has(ServiceRecovery) {
		return // a one-shot or a chat beside the gateway: the owner process trims
	}
	fb := r.sentinel.Feedback
	r.Go("feedback-trim", func(ctx context.Context) error {
		for {
			if _, err := fb.MaybeTrim(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("feedback log trim failed", "err", err)
			}
			if err := clock.Sleep(ctx, r.clk, time.Hour); err != nil {
				return nil
			}
		}
	})
}

// replyReached reports whether a finished turn's reply reached the owner:
// delivered through an outlet, or — on an ephemeral channel with no outlet
// here — handed back on the ticket to the caller that submitted the turn.
func (r *Runtime) replyReached(req spine.TurnRequest, res spine.Result) bool {
	if res.Err != nil || res.Reply == "" {
		return false
	}
	return res.Delivered || (spine.IsEphemeral(req.Channel) && !r.hub.Has(req.Channel))
}

// rememberNudge writes a delivered nudge into its conversation's session, so
// the agent sees what it said unprompted — and the nudge id it needs to call
// nudge_feedback when the owner reacts ("stop reminding me"). One kept in
// the outbox is written when shown, not now.
func (r *Runtime) rememberNudge(ctx context.Context, d executor.Delivery) {
	if d.NudgeID == "" {
		return
	}
	// A delivery to several targets names them all, comma-joined.
	for _, sess := range strings.Split(d.Session, ",") {
		ch, id, ok := spine.SplitConversationKey(sess)
		if !ok || ch == OutboxChannel {
			continue
		}
		e := session.Entry{
			Message:      llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("[proactive %s, nudge_id=%s] %s", d.Action, d.NudgeID, d.Content)},
			Conversation: sess, Channel: ch, ChatID: id, Origin: string(spine.OriginSentinel), At: r.clk.Now(),
		}
		if err := r.sessions.Append(context.WithoutCancel(ctx), e); err != nil {
			r.log.Warn("sentinel: nudge not recorded in session", "session", sess, "err", err)
		}
	}
}

// recordCronFire couples a cron fire to the Sentinel's ledger: the topic is
// marked fired (so no nudge repeats it within the dedup window) and a
// dispatched record marked neutral is written, which keeps a user-scheduled
// reminder from moving the acceptance rate the Sentinel learns from.
func (r *Runtime) recordCronFire(ctx context.Context, topic, content string) error {
	sys := r.sentinel
	if err := sys.Policy.RecordCronFire(ctx, topic, content); err != nil {
		return err
	}
	id := fmt.Sprintf("cron-%s-%d", topic, r.clk.Now().UnixNano())
	return sys.Feedback.RecordDispatched(ctx, feedback.Record{NudgeID: id, Topic: topic, Action: "cron", Source: feedback.SourceCron})
}

// menuToolsExcluded are the tools a discovery menu never offers: those
// that write, run commands, speak to the owner or schedule on their own.
func menuToolsExcluded() []string {
	return []string{"ask_user", "conversation_question", "spawn", "message", "exec",
		"write_file", "edit_file", "cron", feedback.ToolName, memindex.RememberToolName}
}
