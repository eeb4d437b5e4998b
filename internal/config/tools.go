package config

import (
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/tools"
	"github.com/raven-agent/raven/internal/web"
)

// ToolsConfig composes the built-in tools' sections; each tool's package
// owns its type, defaults and checks.
type ToolsConfig struct {
	Exec    ExecConfig    `json:"exec"`
	AskUser AskUserConfig `json:"ask_user"`
	Web     WebConfig     `json:"web"`
	// SearchThreshold: with more tools than this, the external (MCP)
	// ones are found through tool_search instead of sent on every call.
	SearchThreshold int `json:"search_threshold"`
}

// ExecConfig and AskUserConfig are owned by packages tools and questions.
type (
	ExecConfig    = tools.ExecConfig
	AskUserConfig = questions.AskUserConfig
	// WebConfig is owned by package web (web_fetch, web_search).
	WebConfig = web.Config
)

func defaultTools() ToolsConfig {
	return ToolsConfig{Exec: tools.DefaultExecConfig(), AskUser: questions.DefaultAskUserConfig(),
		Web: web.DefaultConfig(), SearchThreshold: tools.DefaultSearchThreshold}
}

func (t ToolsConfig) validate() error {
	if err := section("tools.exec", t.Exec.Validate()); err != nil {
		return err
	}
	if err := section("tools.ask_user", t.AskUser.Validate()); err != nil {
		return err
	}
	if err := section("tools.web", t.Web.Validate()); err != nil {
		return err
	}
	return section("tools", tools.CheckSearchThreshold(t.SearchThreshold))
}
