package outbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Origin names the producer of a proactive message.
type Origin string

// The producers whose messages can wait in the outbox.
const (
	OriginSentinel  Origin = "sentinel"
	OriginCron      Origin = "cron"
	OriginHeartbeat Origin = "heartbeat"
	// OriginSubagent is a spawned agent's result (a Sentinel spawn).
	OriginSubagent Origin = "subagent"
	// OriginSystem is Raven's own notices (a failed job, a restart needed).
	OriginSystem Origin = "system"
)

func (o Origin) valid() bool {
	switch o {
	case OriginSentinel, OriginCron, OriginHeartbeat, OriginSubagent, OriginSystem:
		return true
	}
	return false
}

// maxFieldBytes bounds the short identifying fields (kind, key, routing):
// they are labels, not payload.
const maxFieldBytes = 512

// Item is one proactive message kept until a surface takes it. Put reads
// the fields up to CreatedAt; the rest are the store's bookkeeping.
type Item struct {
	ID     string `json:"id"`
	Origin Origin `json:"origin"`
	// Kind is the producer's label (nudge, menu, reply, notice…). Optional.
	Kind string `json:"kind,omitempty"`
	// Conversation, Channel and ChatID say where the message was meant to
	// go; an attaching surface may use them to file it. Optional.
	Conversation string `json:"conversation,omitempty"`
	Channel      string `json:"channel,omitempty"`
	ChatID       string `json:"chat_id,omitempty"`
	Content      string `json:"content"`
	// Extras is producer data carried verbatim (a nudge id for feedback, a
	// menu's options): a JSON object or empty.
	Extras json.RawMessage `json:"extras,omitempty"`
	// Key, when set, makes Put idempotent: a second Put with the same key
	// returns the first item's id instead of queuing a copy.
	Key string `json:"key,omitempty"`
	// CreatedAt is when the producer made the message (defaults to now).
	CreatedAt time.Time `json:"created_at"`

	QueuedAt     time.Time `json:"queued_at"`
	ClaimedBy    string    `json:"claimed_by,omitempty"`
	ClaimedUntil time.Time `json:"claimed_until,omitzero"`
	DeliveredTo  string    `json:"delivered_to,omitempty"`
	DeliveredAt  time.Time `json:"delivered_at,omitzero"`
}

// Delivered reports whether a surface took the item.
func (it Item) Delivered() bool { return !it.DeliveredAt.IsZero() }

// validate checks it against the limits and returns the extras to store.
func validate(it Item, maxBytes int) (string, error) {
	if !it.Origin.valid() {
		return "", fmt.Errorf("outbox: origin %q (want sentinel, cron, heartbeat, subagent or system): %w", it.Origin, ErrInvalid)
	}
	if it.Content == "" {
		return "", fmt.Errorf("outbox: empty content: %w", ErrInvalid)
	}
	if !utf8.ValidString(it.Content) {
		return "", fmt.Errorf("outbox: content is not valid UTF-8: %w", ErrInvalid)
	}
	for name, v := range map[string]string{"kind": it.Kind, "key": it.Key, "conversation": it.Conversation, "channel": it.Channel, "chat_id": it.ChatID} {
		if len(v) > maxFieldBytes {
			return "", fmt.Errorf("outbox: %s is %d bytes (max %d): %w", name, len(v), maxFieldBytes, ErrInvalid)
		}
		if !utf8.ValidString(v) {
			return "", fmt.Errorf("outbox: %s is not valid UTF-8: %w", name, ErrInvalid)
		}
	}
	extras := ""
	if len(bytes.TrimSpace(it.Extras)) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(it.Extras, &obj); err != nil || obj == nil {
			return "", fmt.Errorf("outbox: extras must be a JSON object: %w", ErrInvalid)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, it.Extras); err != nil {
			return "", fmt.Errorf("outbox: extras: %v: %w", err, ErrInvalid)
		}
		extras = buf.String()
	}
	if n := len(it.Content) + len(extras); n > maxBytes {
		return "", fmt.Errorf("outbox: content and extras are %d bytes (max %d): %w", n, maxBytes, ErrTooLarge)
	}
	return extras, nil
}
