package api

import "time"

// ChatSendParams are chat.send's params.
type ChatSendParams struct {
	Conversation string `json:"conversation"` // channel:chat_id
	Text         string `json:"text"`
}

// ChatSendResult is chat.send's result: what the dispatcher did with the
// message (started, injected, answered, queued...).
type ChatSendResult struct {
	Outcome string `json:"outcome"`
}

// ChatAttachParams are chat.attach's params.
type ChatAttachParams struct {
	Conversation string `json:"conversation"`
}

// ChatAttachResult is chat.attach's result.
type ChatAttachResult struct {
	Attached string `json:"attached"`
}

// ChatMessage is the payload of NotifyChatMessage.
type ChatMessage struct {
	Conversation string `json:"conversation"`
	Content      string `json:"content"`
	Origin       string `json:"origin,omitempty"`
	// Proactive marks a message Raven sent on its own; surfaces mark it.
	Proactive bool `json:"proactive"`
	Reply     bool `json:"reply"`
}

// ChatDelta is the payload of NotifyChatDelta: text appended to the reply
// being written, or (Tool set) a tool call the model made, after which the
// reply starts again.
type ChatDelta struct {
	Conversation string    `json:"conversation"`
	Text         string    `json:"text,omitempty"`
	Tool         *ToolNote `json:"tool,omitempty"`
}

// ToolNote names a tool call in a ChatDelta.
type ToolNote struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// GatewayState is the gateway's part of gateway.status: the values in
// effect in the running gateway (after any live config reload), not the
// file on disk.
type GatewayState struct {
	DataDir         string   `json:"data_dir"`
	Model           string   `json:"model"`
	PlannerModel    string   `json:"planner_model"`
	Channels        []string `json:"channels"`
	Forward         []string `json:"forward"`
	SentinelEnabled bool     `json:"sentinel_enabled"`
	SentinelEvery   string   `json:"sentinel_interval"`
	CronEnabled     bool     `json:"cron_enabled"`
	HeartbeatOn     bool     `json:"heartbeat_enabled"`
	HeartbeatEvery  string   `json:"heartbeat_interval"`
	LogLevel        string   `json:"log_level"`
	// Attached lists the conversations a TUI or chat is attached to.
	Attached []string `json:"attached"`
	// OutboxPending counts proactive messages waiting for an attach.
	OutboxPending int  `json:"outbox_pending"`
	UserBusy      bool `json:"user_busy"`
	// ConfigAppliedAt is when the effective config was last loaded (start
	// or live reload).
	ConfigAppliedAt time.Time `json:"config_applied_at"`
	// RestartNeeded lists the dotted keys changed in config.json since the
	// start that only a restart applies.
	RestartNeeded []string `json:"restart_needed"`
	// ConfigError is why the last reload was refused ("" when it was not):
	// the old config stays in effect.
	ConfigError string `json:"config_error,omitempty"`
}
