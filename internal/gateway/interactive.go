package gateway

import (
	"context"
	"errors"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// EnableAskUser creates the ask_user broker and registers the tool. notify
// emits clarify.request to attached TUI clients (nil without a control API).
// Each question's asking and ending go to the event sink (clarify.requested,
// clarify.resolved) — never the answer text.
func (a *App) EnableAskUser(notify func(conv string, req questions.ClarifyRequest)) *questions.Broker {
	b := questions.NewBroker(questions.BrokerOptions{
		Clock: a.Clock, Logger: a.Log.With("component", "ask_user"),
		Notify: func(conv string, req questions.ClarifyRequest) {
			a.emit(eventlog.KindClarifyRequested, conv, map[string]any{"batch": req.Batch, "index": req.Index,
				"total": req.Total, "timeout_s": req.TimeoutS})
			if notify != nil {
				notify(conv, req)
			}
		},
		OnResolved: func(conv string, r questions.Resolution) {
			a.emit(eventlog.KindClarifyResolved, conv, map[string]any{"batch": r.Batch, "index": r.Index,
				"total": r.Total, "status": r.Status})
		},
		Post: func(ctx context.Context, channel, chatID, text string) error {
			return a.Hub.Post(ctx, spine.Message{Channel: channel, ChatID: chatID, Content: text, Origin: spine.OriginUser})
		},
	})
	a.Tools.Register(questions.NewAskUserTool(b, a.Config.Tools.AskUser.Timeout.D()))
	a.Broker = b
	return b
}

// NewDispatcher builds the inbound dispatch every channel uses: a pending
// ask_user question gets the message first, then the user-inbound hooks,
// then INJECT into a running turn or APPEND.
func (a *App) NewDispatcher(hooks ...channels.Hook) (*channels.Dispatcher, error) {
	if sys := a.Sentinel; sys != nil {
		// A menu pick normally meets the consumer as the agent's inbound
		// hook at turn start. One that arrives mid-turn would be injected
		// into the running turn instead, so catch it here first — only
		// then, so the consumer (and its classifier) runs once per message.
		hooks = append(hooks, func(ctx context.Context, req spine.TurnRequest) (bool, string) {
			if !a.Scheduler.HasInflight(req.Conversation()) {
				return false, ""
			}
			return sys.Consumer.Hook(ctx, req)
		})
	}
	d := channels.DispatcherDeps{
		HasInflight: a.Scheduler.HasInflight, Submit: a.Scheduler.Submit, Post: a.Hub.Post,
		Hooks: hooks, Log: a.Log.With("component", "inbound"),
	}
	if b := a.Broker; b != nil {
		// A reply that arrives after the question timed out is told so once,
		// then handled as an ordinary message.
		d.PendingQuestion = func(conv string) bool { return b.PendingFor(conv) || b.ExpiredUnanswered(conv) }
		d.AnswerQuestion = func(conv, text string) bool {
			err := b.ReplyText(conv, text)
			if errors.Is(err, questions.ErrExpired) {
				b.ForgetExpired(conv)
				ch, id, _ := spine.SplitConversationKey(conv)
				a.Hub.Post(a.ctx, spine.Message{Channel: ch, ChatID: id,
					Content: "That question expired before your answer arrived; treating your message as a new one."})
			}
			return err == nil
		}
	}
	return channels.NewDispatcher(d)
}
