// Package config loads, validates and edits Raven's one configuration file,
// <data dir>/config.json, with typed sections and documented defaults.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm/providers"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/strictjson"
	"github.com/raven-agent/raven/internal/usage"
)

// Config is the whole configuration file. Every section has defaults, so an
// absent or empty file is valid.
type Config struct {
	// Model is "provider/model" (openai/gpt-4o-mini, ollama/qwen2.5:7b,
	// anthropic/claude-sonnet-4-5) or "scripted:PATH". Empty: no model.
	Model     string          `json:"model"`
	Providers ProvidersConfig `json:"providers"`
	Agent     AgentConfig     `json:"agent"`
	Tools     ToolsConfig     `json:"tools"`
	Sentinel  SentinelConfig  `json:"sentinel"`
	Cron      CronConfig      `json:"cron"`
	Heartbeat HeartbeatConfig `json:"heartbeat"`
	Usage     UsageConfig     `json:"usage"`
	Gateway   GatewayConfig   `json:"gateway"`
	Channels  ChannelsConfig  `json:"channels"`
	MCP       MCPConfig       `json:"mcp"`
	Log       LogConfig       `json:"log"`
}

// MCPConfig is the "mcp" section (MCP servers); package mcp owns it and
// its defaults.
type MCPConfig = mcp.Config

// ProvidersConfig is the "providers" section; package providers owns it
// and its defaults.
type ProvidersConfig = providers.Config

// EndpointConfig is one provider endpoint (providers.EndpointConfig).
type EndpointConfig = providers.EndpointConfig

// AgentConfig is the "agent" section; package agent owns it and its
// defaults.
type AgentConfig = agent.FileConfig

// LogConfig selects the log format and level.
type LogConfig struct {
	Format string `json:"format"` // text | json
	Level  string `json:"level"`  // debug | info | warn | error
}

// Default returns the configuration used when the file is absent.
func Default() Config {
	return Config{
		Providers: providers.DefaultConfig(),
		Agent:     agent.DefaultFileConfig(),
		Tools:     defaultTools(),
		Sentinel:  sentinel.DefaultConfig(),
		Cron:      cron.DefaultConfig(),
		Heartbeat: heartbeat.DefaultConfig(),
		Usage:     usage.DefaultConfig(),
		Gateway:   defaultGateway(),
		Channels:  channels.DefaultConfig(),
		MCP:       mcp.DefaultConfig(),
		Log:       LogConfig{Format: "text", Level: "info"},
	}
}

// Error is a configuration problem, naming the file and the full dotted
// key.
type Error struct {
	File string
	Key  string
	Msg  string
	// Err is the underlying decoding error, when there is one.
	Err error
}

// Unwrap exposes the decoding error (a *strictjson.Error) to errors.Is/As.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Key != "":
		return fmt.Sprintf("config %s: %s: %s", e.File, e.Key, e.Msg)
	case e.Key != "":
		return fmt.Sprintf("config: %s: %s", e.Key, e.Msg)
	case e.File == "":
		return "config: " + e.Msg
	default:
		return fmt.Sprintf("config %s: %s", e.File, e.Msg)
	}
}

// maxFileSize bounds the config file: it is hand-edited, never large.
const maxFileSize = 1 << 20

// Load reads path over the defaults. A missing or empty file yields the
// defaults.
func Load(path string) (Config, error) {
	cfg := Default()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, &Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return cfg, &Error{File: path, Msg: err.Error()}
	}
	if len(data) > maxFileSize {
		return cfg, &Error{File: path, Msg: "file is larger than 1 MiB"}
	}
	if err := decode(data, &cfg); err != nil {
		return cfg, withFile(err, path)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, withFile(err, path)
	}
	return cfg, nil
}

// decode decodes data over cfg strictly (strictjson), turning a failure
// into an *Error naming the full dotted key. Empty input leaves cfg alone.
func decode(data []byte, cfg *Config) error {
	err := strictjson.Decode(data, cfg)
	var se *strictjson.Error
	switch {
	case err == nil || errors.Is(err, strictjson.ErrEmpty):
		return nil
	case !errors.As(err, &se):
		return &Error{Msg: err.Error()}
	case se.Kind == strictjson.ErrUnknownField:
		return &Error{Key: se.Field, Msg: "unknown key", Err: err}
	case se.Kind == strictjson.ErrSyntax:
		return &Error{Msg: fmt.Sprintf("%s (at byte %d)", se.Detail, se.Offset), Err: err}
	case se.Kind == strictjson.ErrTrailingData:
		return &Error{Msg: fmt.Sprintf("trailing data at byte %d after the JSON object", se.Offset), Err: err}
	case se.Field == "" && se.Kind == strictjson.ErrType:
		return &Error{Msg: "want one JSON object: " + se.Detail, Err: err}
	}
	return &Error{Key: se.Field, Msg: se.Detail, Err: err}
}

// Validate checks every section, returning the first problem as an *Error.
func (c *Config) Validate() error {
	if msg := modelProblem(c.Model); msg != "" {
		return &Error{Key: "model", Msg: msg}
	}
	if msg := modelProblem(c.Sentinel.PlannerModel); msg != "" {
		return &Error{Key: "sentinel.planner_model", Msg: msg}
	}
	if err := section("providers", c.Providers.Validate()); err != nil {
		return err
	}
	checks := []struct {
		key string
		ok  bool
		msg string
	}{
		{"log.format", c.Log.Format == "text" || c.Log.Format == "json", `must be "text" or "json"`},
		{"log.level", oneOf(c.Log.Level, "debug", "info", "warn", "error"), "must be debug, info, warn or error"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return &Error{Key: ch.key, Msg: ch.msg}
		}
	}
	if err := section("agent", c.Agent.Validate()); err != nil {
		return err
	}
	if err := section("cron", c.Cron.Validate()); err != nil {
		return err
	}
	if err := section("channels", c.Channels.Validate()); err != nil {
		return err
	}
	if err := section("heartbeat", c.Heartbeat.Validate()); err != nil {
		return err
	}
	if err := section("usage", c.Usage.Validate()); err != nil {
		return err
	}
	if err := c.Tools.validate(); err != nil {
		return err
	}
	if err := validateSentinel(c.Sentinel); err != nil {
		return err
	}
	if err := c.Gateway.validate(); err != nil {
		return err
	}
	if err := section("mcp", c.MCP.Validate()); err != nil {
		return err
	}
	return nil
}

// modelProblem says what is wrong with a "provider/model" or
// "scripted:PATH" value, "" when nothing is (empty is no model).
func modelProblem(m string) string {
	if m == "" || strings.HasPrefix(m, "scripted:") {
		return ""
	}
	p, name, ok := strings.Cut(m, "/")
	if !ok || name == "" {
		return fmt.Sprintf("%q is not provider/model (e.g. openai/gpt-4o-mini, ollama/qwen2.5:7b)", m)
	}
	switch p {
	case "openai", "ollama", "anthropic":
		return ""
	}
	return fmt.Sprintf("unknown provider %q (want openai, ollama, anthropic or scripted:PATH)", p)
}

// section names a feature section's *configtype.FieldError by its full
// dotted key.
func section(prefix string, err error) error {
	var fe *configtype.FieldError
	if errors.As(err, &fe) {
		return &Error{Key: prefix + "." + fe.Field, Msg: fe.Msg}
	}
	if err != nil {
		return &Error{Key: prefix, Msg: err.Error()}
	}
	return nil
}

func oneOf(s string, opts ...string) bool {
	for _, o := range opts {
		if s == o {
			return true
		}
	}
	return false
}

// Duration is the shared duration type of every section ("30m", "1h").
type Duration = configtype.Duration

// PlannerModel is the model the Sentinel planner uses: sentinel.planner_model
// when set, else the global model. The one place that choice is made.
func (c Config) PlannerModel() string {
	if c.Sentinel.PlannerModel != "" {
		return c.Sentinel.PlannerModel
	}
	return c.Model
}
