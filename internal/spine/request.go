// Package spine is the transport every turn and proactive message travels:
// origin-tagged TurnRequests, per-conversation serial lanes, and the DeliveryHub.
package spine

import (
	"errors"
	"strings"
)

// Origin says who started a turn. The agent loop gates its hook chains on it.
type Origin string

const (
	OriginUser      Origin = "user"
	OriginSentinel  Origin = "sentinel"
	OriginCron      Origin = "cron"
	OriginHeartbeat Origin = "heartbeat"
	OriginSubagent  Origin = "subagent"
	// OriginAnswer continues a turn after the owner answered a durable
	// question: user-initiated for hooks, system-generated for after-send.
	OriginAnswer Origin = "answer"
)

// Valid reports whether o is a known origin.
func (o Origin) Valid() bool {
	switch o {
	case OriginUser, OriginSentinel, OriginCron, OriginHeartbeat, OriginSubagent, OriginAnswer:
		return true
	}
	return false
}

// Proactive reports whether the turn was started by Raven rather than a person.
func (o Origin) Proactive() bool {
	switch o {
	case OriginSentinel, OriginCron, OriginHeartbeat, OriginSubagent:
		return true
	}
	return false
}

// UserInbound reports whether the turn carries genuine user input, so the
// user-inbound hooks (engagement detection, discovery-menu consumer) run.
func (o Origin) UserInbound() bool { return o == OriginUser || o == OriginAnswer }

// SystemGenerated reports whether the turn's output is system-generated, so
// the after-send response modifiers (the nudge injector) are skipped: a
// proactive reply must not get a nudge layered on top of it. This is a
// separate gate from UserInbound even where their members coincide.
func (o Origin) SystemGenerated() bool { return o != OriginUser }

// BusyPolicy says what to do with a request whose conversation already has a
// turn running.
type BusyPolicy int

const (
	// Append queues a new turn after the running one.
	Append BusyPolicy = iota
	// Inject hands the content to the running turn, which drains it at the
	// top of its next tool-loop iteration; undrained, it becomes an appended turn.
	Inject
	// Interrupt cancels the running turn's context, then runs.
	Interrupt
)

func (b BusyPolicy) String() string {
	switch b {
	case Append:
		return "append"
	case Inject:
		return "inject"
	case Interrupt:
		return "interrupt"
	}
	return "unknown"
}

// TurnRequest is one unit of work for the agent loop.
type TurnRequest struct {
	Origin Origin
	// ConversationID keys the lane; empty means Channel + ":" + ChatID.
	ConversationID string
	Channel        string
	ChatID         string
	Content        string
	Busy           BusyPolicy
	Extras         map[string]any
}

// Conversation returns the lane key of the request.
func (r *TurnRequest) Conversation() string {
	if r.ConversationID != "" {
		return r.ConversationID
	}
	return ConversationKey(r.Channel, r.ChatID)
}

// ConversationKey joins a channel and chat id into a conversation key.
func ConversationKey(channel, chatID string) string { return channel + ":" + chatID }

// SplitConversationKey splits "channel:chat_id"; the chat id may contain colons.
func SplitConversationKey(key string) (channel, chatID string, ok bool) {
	channel, chatID, ok = strings.Cut(key, ":")
	if !ok || channel == "" || chatID == "" {
		return "", "", false
	}
	return channel, chatID, true
}

// ErrInterrupted is the cancellation cause of a turn interrupted by a newer
// INTERRUPT request.
var ErrInterrupted = errors.New("spine: turn interrupted by a newer request")

// ErrClosed is returned by Submit after Shutdown began.
var ErrClosed = errors.New("spine: scheduler is shutting down")
