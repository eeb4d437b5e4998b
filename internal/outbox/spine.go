package outbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/raven-agent/raven/internal/spine"
)

// Extras keys ToMessage adds, so a surface can say how late a message is.
const (
	ExtraOutboxID = "outbox_id"
	ExtraQueuedAt = "outbox_queued_at"
)

// FromMessage is the outbox item that keeps m. Origins that are not
// proactive (a reply to the owner's own turn) become OriginSystem.
func FromMessage(m spine.Message) (Item, error) {
	it := Item{Origin: OriginSystem, Kind: "post", Channel: m.Channel, ChatID: m.ChatID, Content: m.Content}
	switch o := Origin(m.Origin); o {
	case OriginSentinel, OriginCron, OriginHeartbeat, OriginSubagent:
		it.Origin = o
	}
	if m.Reply {
		it.Kind = "reply"
	}
	if len(m.Extras) > 0 {
		b, err := json.Marshal(m.Extras)
		if err != nil {
			return Item{}, fmt.Errorf("outbox: extras of a %s message: %v: %w", m.Origin, err, ErrInvalid)
		}
		it.Extras = b
	}
	return it, nil
}

// ToMessage is the proactive message that shows it on a surface's outlet;
// Channel and ChatID are the surface's to set.
func ToMessage(it Item) spine.Message {
	m := spine.Message{Content: it.Content, Origin: spine.Origin(it.Origin), Proactive: true, Reply: it.Kind == "reply", Extras: map[string]any{}}
	if it.Origin == OriginSystem {
		m.Origin = ""
	}
	if len(it.Extras) > 0 {
		_ = json.Unmarshal(it.Extras, &m.Extras) // validated as an object by Put
	}
	m.Extras[ExtraOutboxID] = it.ID
	m.Extras[ExtraQueuedAt] = it.QueuedAt
	return m
}

// Outlet is a spine.Outlet that keeps every message in the outbox: the
// target of last resort when no surface or channel can take a proactive
// message. Deliver fails (ErrFull, ErrTooLarge, ErrInvalid) only when the
// message could not be kept, so the caller knows it is lost and says so.
type Outlet struct{ Store *Store }

// Deliver implements spine.Outlet.
func (o Outlet) Deliver(ctx context.Context, m spine.Message) error {
	it, err := FromMessage(m)
	if err != nil {
		return err
	}
	_, err = o.Store.Put(ctx, it)
	return err
}

var _ spine.Outlet = Outlet{}
