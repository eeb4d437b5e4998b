// Package mcp connects Raven to MCP servers through the official Go SDK: servers from
// config, started on first use, stopped when idle, their tools offered as NAME__tool.
package mcp

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// The defaults of the "mcp" section, applied once by New to zero values.
const (
	// DefaultCallTimeout bounds one tool call, and a server's start
	// (spawn, initialize, list tools).
	DefaultCallTimeout = 60 * time.Second
	// DefaultIdleTimeout is how long a server may sit unused before it is
	// stopped; the next call starts it again.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxResult bounds the text of one tool result handed to the
	// model.
	DefaultMaxResult = 64 << 10
	// maxServers bounds the configured servers: each is a process or a
	// connection the owner pays for.
	maxServers = 64
)

// Config is the "mcp" section of config.json.
type Config struct {
	// Servers are the MCP servers by name; NAME prefixes their tools
	// (NAME__tool). Env and headers often hold tokens, so the section is
	// masked by `config list`.
	Servers map[string]ServerConfig `json:"servers,omitempty" config:"secret"`
	// CallTimeout and IdleTimeout apply to every server that does not set
	// its own.
	CallTimeout configtype.Duration `json:"call_timeout"`
	IdleTimeout configtype.Duration `json:"idle_timeout"`
}

// ServerConfig is one server: a stdio command (run in the exec sandbox) or
// a streamable HTTP endpoint — exactly one of Command and URL.
type ServerConfig struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty" config:"secret"`
	// Cwd is the server's working directory, inside the workspace (a
	// relative path is taken from the workspace); default the workspace.
	Cwd string `json:"cwd,omitempty"`
	// Network lets a stdio server use the network, which the sandbox
	// otherwise refuses it.
	Network bool `json:"network,omitempty"`

	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty" config:"secret"`

	CallTimeout configtype.Duration `json:"call_timeout,omitempty"`
	IdleTimeout configtype.Duration `json:"idle_timeout,omitempty"`
}

// DefaultConfig returns the documented defaults: no servers.
func DefaultConfig() Config {
	return Config{CallTimeout: configtype.Duration(DefaultCallTimeout), IdleTimeout: configtype.Duration(DefaultIdleTimeout)}
}

// Stdio reports whether the server is a local command.
func (s ServerConfig) Stdio() bool { return s.Command != "" }

// Names lists the configured servers, sorted.
func (c Config) Names() []string {
	out := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Validate returns the first invalid setting as a *configtype.FieldError.
// Problems inside one server are reported on "servers" (the key `config
// set` reaches) with the server and field named in the message.
func (c Config) Validate() error {
	if err := checkTimeouts("", c.CallTimeout, c.IdleTimeout, false); err != nil {
		return err
	}
	if len(c.Servers) > maxServers {
		return configtype.Invalid("servers", "at most %d servers", maxServers)
	}
	for _, name := range c.Names() {
		if err := c.Servers[name].validate(name); err != nil {
			return err
		}
	}
	return nil
}

func (s ServerConfig) validate(name string) error {
	bad := func(format string, a ...any) error {
		return configtype.Invalid("servers", "server %q: %s", name, fmt.Sprintf(format, a...))
	}
	if !ValidName(name) {
		return bad("the name must be 1..32 of a-z 0-9 _ - (without \"__\", which separates it from the tool name)")
	}
	switch {
	case s.Command == "" && s.URL == "":
		return bad("set command (a stdio server) or url (a streamable HTTP server)")
	case s.Command != "" && s.URL != "":
		return bad("set command or url, not both")
	case !configtype.OneLine(s.Command):
		return bad("command has a control character")
	}
	if s.URL != "" {
		if !configtype.AbsoluteHTTP(s.URL) {
			return bad("url %q must be an absolute http(s) URL", s.URL)
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" || s.Network {
			return bad("args, env, cwd and network are for stdio servers (command)")
		}
		for k, v := range s.Headers {
			if k == "" || !configtype.OneLine(k) || strings.ContainsAny(k, ": ") || !configtype.OneLine(v) {
				return bad("header %q is not a valid header line", k)
			}
		}
	}
	if s.Command != "" {
		if len(s.Headers) > 0 {
			return bad("headers are for HTTP servers (url)")
		}
		for _, a := range s.Args {
			if strings.ContainsRune(a, 0) {
				return bad("an argument has a NUL byte")
			}
		}
		for k, v := range s.Env {
			if k == "" || strings.ContainsAny(k, "= \t\n\r\x00") || strings.ContainsRune(v, 0) {
				return bad("env %q is not a variable name", k)
			}
		}
		if s.Cwd != "" && !configtype.OneLine(s.Cwd) {
			return bad("cwd has a control character")
		}
		if s.Cwd != "" && !filepath.IsAbs(s.Cwd) && strings.HasPrefix(filepath.Clean(s.Cwd), "..") {
			return bad("cwd %q leaves the workspace", s.Cwd)
		}
	}
	if err := checkTimeouts(name, s.CallTimeout, s.IdleTimeout, true); err != nil {
		return err
	}
	return nil
}

func checkTimeouts(name string, call, idle configtype.Duration, zeroOK bool) error {
	invalid := func(field, msg string) error {
		if name != "" {
			return configtype.Invalid("servers", "server %q: %s %s", name, field, msg)
		}
		return configtype.Invalid(field, "%s", msg)
	}
	if !(zeroOK && call == 0) && (call.D() < 100*time.Millisecond || call.D() > time.Hour) {
		return invalid("call_timeout", "must be 100ms..1h")
	}
	if !(zeroOK && idle == 0) && (idle.D() < time.Second || idle.D() > 7*24*time.Hour) {
		return invalid("idle_timeout", "must be 1s..168h")
	}
	return nil
}

// ValidName reports whether name can name a server: 1..32 of a-z 0-9 _ -,
// without the "__" that separates server and tool in NAME__tool.
func ValidName(name string) bool {
	if len(name) < 1 || len(name) > 32 || strings.Contains(name, "__") {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// effective fills a server's unset timeouts from the section.
func (c Config) effective(s ServerConfig) ServerConfig {
	if s.CallTimeout == 0 {
		s.CallTimeout = c.CallTimeout
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = c.IdleTimeout
	}
	if s.CallTimeout == 0 {
		s.CallTimeout = configtype.Duration(DefaultCallTimeout)
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = configtype.Duration(DefaultIdleTimeout)
	}
	return s
}
