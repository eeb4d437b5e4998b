package config

import "time"

// ToolsConfig tunes the built-in tools.
type ToolsConfig struct {
	Exec    ExecConfig    `json:"exec"`
	AskUser AskUserConfig `json:"ask_user"`
}

// ExecConfig bounds the exec tool.
type ExecConfig struct {
	Enabled   bool     `json:"enabled"`
	Timeout   Duration `json:"timeout"`
	MaxOutput int      `json:"max_output"`
	// Deny lists extra command patterns refused on top of the built-in list.
	Deny []string `json:"deny,omitempty"`
}

// AskUserConfig tunes the ask_user tool.
type AskUserConfig struct {
	// Timeout is the one budget shared by every question of one call.
	Timeout Duration `json:"timeout"`
}

func defaultTools() ToolsConfig {
	return ToolsConfig{
		Exec:    ExecConfig{Enabled: true, Timeout: Duration(60 * time.Second), MaxOutput: 16 << 10},
		AskUser: AskUserConfig{Timeout: Duration(600 * time.Second)},
	}
}

func (t ToolsConfig) validate() error {
	switch {
	case t.Exec.Timeout < Duration(time.Second):
		return &Error{Key: "tools.exec.timeout", Msg: "must be at least 1s"}
	case t.Exec.MaxOutput < 256:
		return &Error{Key: "tools.exec.max_output", Msg: "must be at least 256 bytes"}
	case t.AskUser.Timeout < Duration(time.Second):
		return &Error{Key: "tools.ask_user.timeout", Msg: "must be at least 1s"}
	}
	return nil
}
