package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/raven-agent/raven/internal/spine"
)

// Message is the message tool: post a message to a channel through the hub.
type Message struct {
	Post func(ctx context.Context, m spine.Message) error
}

func (Message) Name() string { return "message" }
func (Message) Description() string {
	return "Send a message to a chat channel now (defaults to the current conversation's channel)."
}
func (Message) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"content"},
		"properties": map[string]any{
			"content": map[string]any{"type": "string", "minLength": 1, "maxLength": 16000},
			"channel": map[string]any{"type": "string", "maxLength": 64},
			"chat_id": map[string]any{"type": "string", "maxLength": 256},
		}}
}
func (t Message) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Content string
		Channel string
		ChatID  string `json:"chat_id"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if turn, ok := TurnFrom(ctx); ok {
		if a.Channel == "" {
			a.Channel = turn.Channel
		}
		if a.ChatID == "" && a.Channel == turn.Channel {
			a.ChatID = turn.ChatID
		}
	}
	if a.Channel == "" || a.ChatID == "" {
		return "", fmt.Errorf("message: channel and chat_id are required outside a conversation")
	}
	origin := spine.OriginUser
	if turn, ok := TurnFrom(ctx); ok {
		origin = turn.Origin
	}
	if err := t.Post(ctx, spine.Message{Channel: a.Channel, ChatID: a.ChatID, Content: a.Content, Origin: origin}); err != nil {
		return "", fmt.Errorf("message: %w", err)
	}
	return fmt.Sprintf("sent to %s:%s", a.Channel, a.ChatID), nil
}

// Spawn is the spawn tool: run a subagent in the background; its result is
// delivered to the current conversation when it finishes.
type Spawn struct {
	Spawn func(ctx context.Context, task, channel, chatID string) (id string, err error)
}

func (Spawn) Name() string { return "spawn" }
func (Spawn) Description() string {
	return "Start a background subagent for a self-contained task; its result is sent to this conversation when done."
}
func (Spawn) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"task"},
		"properties": map[string]any{"task": map[string]any{"type": "string", "minLength": 1, "maxLength": 8000}}}
}
func (t Spawn) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct{ Task string }
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	turn, ok := TurnFrom(ctx)
	if !ok {
		return "", fmt.Errorf("spawn: no conversation to report back to")
	}
	if turn.Origin == spine.OriginSubagent {
		return "", fmt.Errorf("spawn: a subagent cannot spawn further subagents")
	}
	id, err := t.Spawn(ctx, a.Task, turn.Channel, turn.ChatID)
	if err != nil {
		return "", fmt.Errorf("spawn: %w", err)
	}
	return fmt.Sprintf("subagent %s started; its result will be posted here when done", id), nil
}
