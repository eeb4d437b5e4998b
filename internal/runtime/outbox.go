package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// The outbox is a hub outlet like any channel: the resolver's last resort.
const (
	OutboxChannel = "outbox"
	OutboxChatID  = "owner"
)

// Outbox keeps proactive messages no surface could take until the owner
// next attaches (*outbox.Store). Drain shows each waiting item to one
// surface exactly once, across processes.
type Outbox interface {
	Put(ctx context.Context, it outbox.Item) (string, error)
	Drain(ctx context.Context, surface string, show func(context.Context, outbox.Item) error) (int, error)
	Count(ctx context.Context) (int, error)
}

func (r *Runtime) buildOutbox(ctx context.Context, o Options) error {
	r.outbox = o.Outbox
	if r.outbox == nil {
		ob, err := outbox.Open(ctx, r.db, outbox.Options{Clock: r.clk, Logger: r.log.With("component", "outbox")})
		if err != nil {
			return err
		}
		r.outbox = ob
	}
	r.hub.Register(OutboxChannel, spine.OutletFunc(r.keep))
	return nil
}

// keep is the outbox channel's outlet: the message waits durably for the
// owner's next attach. It counts as delivered — it will be shown.
func (r *Runtime) keep(ctx context.Context, m spine.Message) error {
	it, err := outbox.FromMessage(m)
	if err != nil {
		return fmt.Errorf("runtime: outbox: %w", err)
	}
	id, err := r.outbox.Put(context.WithoutCancel(ctx), it)
	if err != nil {
		return fmt.Errorf("runtime: outbox: %w", err)
	}
	r.log.Info("no surface for a proactive message: kept in the outbox until the owner attaches",
		"id", id, "origin", m.Origin, "reply", m.Reply)
	r.emit("outbox.queued", "", map[string]any{"id": id, "origin": m.Origin})
	return nil
}

// AttachBurst bounds the outbox items one attach shows: a control-API
// connection's outbound queue (256 frames) drops a client that is sent
// more at once. The rest wait for the next attach; a notice says so.
const AttachBurst = 100

// errBurstFull stops a drain at AttachBurst; the outbox keeps the rest.
var errBurstFull = errors.New("attach burst shown")

// showMenu makes a discovery menu kept in the outbox answerable on the
// surface that now shows it (ISSUE8 §2.1/§2.5): the owner's "1" there is
// the pick. A menu that closed while it waited says so instead of
// inviting a pick nobody will take.
func (r *Runtime) showMenu(ctx context.Context, id, conv, content string) string {
	err := r.sentinel.Pending.Show(ctx, id, conv)
	switch {
	case errors.Is(err, executor.ErrNoPendingDecision):
		return content + "\n\n(This menu is no longer open.)"
	case err != nil:
		r.log.Warn("outbox: menu not made answerable on the surface showing it", "decision", id, "conversation", conv, "err", err)
	}
	return content
}

// rememberShown writes a Sentinel message shown from the outbox into the
// conversation it was shown in, as rememberNudge does for one delivered
// at once, so the next turn sees what the owner just read.
func (r *Runtime) rememberShown(ctx context.Context, conv string, m spine.Message) {
	if m.Origin != spine.OriginSentinel {
		return
	}
	tag := "[proactive, from the outbox]"
	if id, _ := m.Extras[executor.ExtraNudgeID].(string); id != "" {
		tag = fmt.Sprintf("[proactive, from the outbox, nudge_id=%s]", id)
	}
	e := session.Entry{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: tag + " " + m.Content},
		Conversation: conv, Channel: m.Channel, ChatID: m.ChatID, Origin: string(spine.OriginSentinel), At: r.clk.Now(),
	}
	if err := r.sessions.Append(context.WithoutCancel(ctx), e); err != nil {
		r.log.Warn("outbox: shown message not recorded in session", "conversation", conv, "err", err)
	}
}

// deliverOutbox shows conv's new surface the owner's pending outbox items,
// oldest first and at most AttachBurst, each marked delivered once shown;
// one that could not be shown stays for the next attach.
func (r *Runtime) deliverOutbox(ctx context.Context, conv string, s Surface) {
	name := fmt.Sprintf("%s/%d/%d", conv, os.Getpid(), r.attachSeq.Add(1))
	ch, id, _ := spine.SplitConversationKey(conv)
	shown := 0
	n, err := r.outbox.Drain(ctx, name, func(ctx context.Context, it outbox.Item) error {
		if shown == AttachBurst {
			return errBurstFull
		}
		m := outbox.ToMessage(it)
		m.Channel, m.ChatID, m.Reply = ch, id, false
		menu, _ := m.Extras[executor.ExtraPendingDecision].(string)
		if menu != "" {
			m.Content = r.showMenu(ctx, menu, conv, m.Content)
		}
		if err := s.Deliver(ctx, m); err != nil {
			if menu != "" {
				if uerr := r.sentinel.Pending.Unshow(context.WithoutCancel(ctx), menu, conv); uerr != nil {
					r.log.Warn("outbox: menu left answerable where it was not shown", "decision", menu, "conversation", conv, "err", uerr)
				}
			}
			return err
		}
		shown++
		r.rememberShown(ctx, conv, m)
		return nil
	})
	switch {
	case errors.Is(err, errBurstFull):
		left, cerr := r.outbox.Count(ctx)
		if cerr == nil && left > 0 {
			s.Deliver(ctx, spine.Message{Channel: ch, ChatID: id, Proactive: true,
				Content: fmt.Sprintf("%d more messages wait in the outbox: raven inbox lists them; they are shown at the next attach.", left)})
		}
	case err != nil:
		r.log.Warn("outbox: not every waiting item was shown on attach; the rest wait for the next", "conversation", conv, "shown", n, "err", err)
	}
	if n > 0 {
		r.emit("outbox.delivered", conv, map[string]any{"count": n})
	}
}
