package spine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
)

// Message is something delivered to a person on a channel.
type Message struct {
	Channel string
	ChatID  string
	Content string
	Origin  Origin
	// Proactive marks a message Raven sent on its own (the seed's
	// _sentinel_origin). The CLI outlet prefixes a marker; real channel
	// outlets deliver the content verbatim.
	Proactive bool
	// Reply marks the reply to a turn (as opposed to a non-turn Post).
	Reply  bool
	Extras map[string]any
}

// Outlet delivers messages for one channel.
type Outlet interface {
	Deliver(ctx context.Context, m Message) error
}

// OutletFunc adapts a function to an Outlet.
type OutletFunc func(ctx context.Context, m Message) error

// Deliver calls f.
func (f OutletFunc) Deliver(ctx context.Context, m Message) error { return f(ctx, m) }

// ErrNoOutlet is returned when a message targets a channel with no outlet.
var ErrNoOutlet = errors.New("spine: no outlet for channel")

// ephemeralChannels are interactive surfaces that exist only while a person
// is attached; a reply to them with nobody attached is dropped, not an error.
var ephemeralChannels = map[string]bool{"cli": true, "tui": true, "cron": true, "heartbeat": true, "sentinel": true, "subagent": true}

// IsEphemeral reports whether channel is an ephemeral surface (cli, tui, and
// the internal channels of proactive services and subagents).
func IsEphemeral(channel string) bool { return ephemeralChannels[channel] }

// Hub routes messages to registered channel outlets.
type Hub struct {
	log *slog.Logger

	mu       sync.RWMutex
	outlets  map[string]Outlet
	watchers []func(Message, error)
}

// NewHub returns an empty hub.
func NewHub(log *slog.Logger) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{log: log, outlets: make(map[string]Outlet)}
}

// Register attaches the outlet for channel, replacing any previous one.
func (h *Hub) Register(channel string, o Outlet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outlets[channel] = o
}

// Unregister detaches channel's outlet.
func (h *Hub) Unregister(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.outlets, channel)
}

// Has reports whether channel has an outlet.
func (h *Hub) Has(channel string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.outlets[channel]
	return ok
}

// Channels lists the channels with outlets, sorted.
func (h *Hub) Channels() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.outlets))
	for c := range h.outlets {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Watch registers fn to observe every delivery attempt and its outcome (for
// the event log). fn must not block.
func (h *Hub) Watch(fn func(Message, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watchers = append(h.watchers, fn)
}

// Post delivers a non-turn message. It fails with ErrNoOutlet when the
// channel has no outlet, so callers such as the nudge dispatcher know the
// message was not delivered and must not be charged against a quota.
func (h *Hub) Post(ctx context.Context, m Message) error {
	h.mu.RLock()
	o, ok := h.outlets[m.Channel]
	watchers := h.watchers
	h.mu.RUnlock()
	var err error
	if !ok {
		err = fmt.Errorf("%w %q", ErrNoOutlet, m.Channel)
	} else if derr := o.Deliver(ctx, m); derr != nil {
		err = fmt.Errorf("spine: deliver to %s:%s: %w", m.Channel, m.ChatID, derr)
	}
	for _, w := range watchers {
		w(m, err)
	}
	return err
}

// reply delivers a turn's reply to its source channel. A reply to an
// ephemeral channel nobody is attached to is dropped: that is how silent and
// broadcast cron turns keep their reply off every outlet.
func (h *Hub) reply(ctx context.Context, m Message) (bool, error) {
	m.Reply = true
	if !h.Has(m.Channel) && IsEphemeral(m.Channel) {
		h.log.Debug("reply dropped: ephemeral channel has no outlet", "channel", m.Channel, "chat_id", m.ChatID)
		return false, nil
	}
	if err := h.Post(ctx, m); err != nil {
		return false, err
	}
	return true, nil
}
