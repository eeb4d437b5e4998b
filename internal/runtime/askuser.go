package runtime

import (
	"context"
	"errors"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// buildAskUser creates the ask_user broker and registers the tool. A
// question goes to the Askers attached to its conversation (a TUI's
// clarify.request, a one-shot terminal's prompt); every other surface and
// chat channel gets it rendered as text. Each question's asking and ending
// go to the event log (clarify.requested, clarify.resolved) — never the
// answer text.
func (r *Runtime) buildAskUser(context.Context, Options) error {
	r.broker = questions.NewBroker(questions.BrokerOptions{
		Clock: r.clk, Logger: r.log.With("component", "ask_user"),
		Notify: func(conv string, req questions.ClarifyRequest) {
			r.emit(eventlog.KindClarifyRequested, conv, map[string]any{"batch": req.Batch, "index": req.Index,
				"total": req.Total, "timeout_s": req.TimeoutS})
			r.surfaces.ask(conv, req)
		},
		OnResolved: func(conv string, res questions.Resolution) {
			r.emit(eventlog.KindClarifyResolved, conv, map[string]any{"batch": res.Batch, "index": res.Index,
				"total": res.Total, "status": res.Status})
		},
		Post: func(ctx context.Context, channel, chatID, text string) error {
			conv := spine.ConversationKey(channel, chatID)
			for _, s := range r.surfaces.of(conv) {
				if _, ok := s.(Asker); ok {
					return nil // it put the question itself
				}
			}
			return r.hub.Post(ctx, spine.Message{Channel: channel, ChatID: chatID, Content: text, Origin: spine.OriginUser})
		},
	})
	r.toolReg.Register(questions.NewAskUserTool(r.broker, r.cfg.Tools.AskUser.Timeout.D()))
	return nil
}

// buildInbound builds the inbound dispatch every channel and surface uses:
// a pending ask_user question gets the message first, then the Sentinel's
// menu-pick consumer, then INJECT into a running turn or APPEND.
func (r *Runtime) buildInbound(context.Context, Options) error {
	sys := r.sentinel
	// A menu pick normally meets the consumer as the agent's inbound hook
	// at turn start. One that arrives mid-turn would be injected into the
	// running turn instead, so catch it here first — only then, so the
	// consumer (and its classifier) runs once per message.
	hooks := []channels.Hook{func(ctx context.Context, req spine.TurnRequest) (bool, string) {
		if !r.scheduler.HasInflight(req.Conversation()) {
			return false, ""
		}
		return sys.Consumer.Hook(ctx, req)
	}}
	b := r.broker
	d := channels.DispatcherDeps{
		HasInflight: r.scheduler.HasInflight, Submit: r.scheduler.Submit, Post: r.hub.Post,
		Hooks: hooks, Log: r.log.With("component", "inbound"),
		// A reply that arrives after the question timed out is told so
		// once, then handled as an ordinary message.
		PendingQuestion: func(conv string) bool { return b.PendingFor(conv) || b.ExpiredUnanswered(conv) },
		AnswerQuestion: func(conv, text string) bool {
			err := b.ReplyText(conv, text)
			if errors.Is(err, questions.ErrExpired) {
				b.ForgetExpired(conv)
				ch, id, _ := spine.SplitConversationKey(conv)
				r.hub.Post(r.ctx, spine.Message{Channel: ch, ChatID: id,
					Content: "That question expired before your answer arrived; treating your message as a new one."})
			}
			return err == nil
		},
	}
	var err error
	r.inbound, err = channels.NewDispatcher(d)
	return err
}
