package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/raven-agent/raven/internal/spine"
)

// The outbox is a hub outlet like any channel: the resolver's last resort.
const (
	OutboxChannel = "outbox"
	OutboxChatID  = "owner"
)

// OutboxItem is one kept message, as the runtime reads it back.
type OutboxItem struct {
	ID      string
	Message spine.Message
}

// Outbox keeps proactive messages no surface could take until the owner
// next attaches. Delivery is claim, show, then MarkDelivered (or Release
// when showing failed), so two surfaces attaching at once show an item once.
type Outbox interface {
	Put(ctx context.Context, m spine.Message) (id string, err error)
	Claim(ctx context.Context, surface string) ([]OutboxItem, error)
	MarkDelivered(ctx context.Context, id, surface string) error
	Release(ctx context.Context, id, surface string) error
	Count(ctx context.Context) (int, error)
}

func (r *Runtime) buildOutbox(ctx context.Context, o Options) error {
	r.outbox = o.Outbox
	if r.outbox == nil {
		ob, err := openStoreOutbox(ctx, r)
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
	id, err := r.outbox.Put(context.WithoutCancel(ctx), m)
	if err != nil {
		return fmt.Errorf("runtime: outbox: %w", err)
	}
	r.log.Info("no surface for a proactive message: kept in the outbox until the owner attaches",
		"id", id, "origin", m.Origin, "reply", m.Reply)
	r.emit("outbox.queued", "", map[string]any{"id": id, "origin": m.Origin})
	return nil
}

// deliverOutbox shows conv's new surface the owner's pending outbox items,
// oldest first, and marks each delivered once shown.
func (r *Runtime) deliverOutbox(ctx context.Context, conv string, s Surface) {
	name := fmt.Sprintf("%s#%p", conv, s)
	items, err := r.outbox.Claim(ctx, name)
	if err != nil {
		r.log.Warn("outbox: pending items not claimed on attach", "conversation", conv, "err", err)
		return
	}
	ch, id, _ := spine.SplitConversationKey(conv)
	for _, it := range items {
		m := it.Message
		m.Channel, m.ChatID, m.Proactive, m.Reply = ch, id, true, false
		if err := s.Deliver(ctx, m); err != nil {
			r.log.Warn("outbox: item not shown on attach; kept", "id", it.ID, "err", err)
			if rerr := r.outbox.Release(context.WithoutCancel(ctx), it.ID, name); rerr != nil {
				r.log.Warn("outbox: release", "id", it.ID, "err", rerr)
			}
			continue
		}
		if err := r.outbox.MarkDelivered(context.WithoutCancel(ctx), it.ID, name); err != nil && !errors.Is(err, context.Canceled) {
			r.log.Warn("outbox: shown but not marked delivered", "id", it.ID, "err", err)
			continue
		}
		r.emit("outbox.delivered", conv, map[string]any{"id": it.ID})
	}
}
