package tools

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/spine"
)

// Names of the message and spawn tools.
const (
	MessageName = "message"
	SpawnName   = "spawn"
)

type messageArgs struct {
	Content string `json:"content"`
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
}

// NewMessage returns the message tool: post a message to a channel through
// the hub (post is the hub's Post).
func NewMessage(post func(ctx context.Context, m spine.Message) error) Tool {
	return Must(New(MessageName, "Send a message to a chat channel now (defaults to the current conversation's channel).",
		func(ctx context.Context, a messageArgs) (string, error) {
			turn, inTurn := TurnFrom(ctx)
			if inTurn {
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
			if inTurn {
				origin = turn.Origin
			}
			if err := post(ctx, spine.Message{Channel: a.Channel, ChatID: a.ChatID, Content: a.Content, Origin: origin}); err != nil {
				return "", fmt.Errorf("message: %w", err)
			}
			return fmt.Sprintf("sent to %s:%s", a.Channel, a.ChatID), nil
		}, Len("content", 1, 16000), Len("channel", 0, 64), Len("chat_id", 0, 256)))
}

type spawnArgs struct {
	Task string `json:"task"`
}

// NewSpawn returns the spawn tool: run a subagent in the background; its
// result is delivered to the current conversation when it finishes.
func NewSpawn(spawn func(ctx context.Context, task, channel, chatID string) (id string, err error)) Tool {
	return Must(New(SpawnName, "Start a background subagent for a self-contained task; its result is sent to this conversation when done.",
		func(ctx context.Context, a spawnArgs) (string, error) {
			turn, ok := TurnFrom(ctx)
			if !ok {
				return "", fmt.Errorf("spawn: no conversation to report back to")
			}
			if turn.Origin == spine.OriginSubagent {
				return "", fmt.Errorf("spawn: a subagent cannot spawn further subagents")
			}
			id, err := spawn(ctx, a.Task, turn.Channel, turn.ChatID)
			if err != nil {
				return "", fmt.Errorf("spawn: %w", err)
			}
			return fmt.Sprintf("subagent %s started; its result will be posted here when done", id), nil
		}, Len("task", 1, 8000)))
}
