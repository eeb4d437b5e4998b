package mcp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/mcp"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		server string
		cfg    mcp.ServerConfig
		want   string // "" valid
	}{
		{"stdio", "fs", mcp.ServerConfig{Command: "mcp-fs", Args: []string{"--root", "."}, Env: map[string]string{"TOKEN": "x"}}, ""},
		{"http", "web", mcp.ServerConfig{URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{"neither", "x", mcp.ServerConfig{}, "set command (a stdio server) or url"},
		{"both", "x", mcp.ServerConfig{Command: "a", URL: "http://h/"}, "not both"},
		{"bad name", "Git Hub", mcp.ServerConfig{Command: "a"}, "the name must be"},
		{"separator in name", "a__b", mcp.ServerConfig{Command: "a"}, "the name must be"},
		{"relative url", "x", mcp.ServerConfig{URL: "example.com/mcp"}, "absolute http(s) URL"},
		{"args on http", "x", mcp.ServerConfig{URL: "http://h/", Args: []string{"a"}}, "for stdio servers"},
		{"headers on stdio", "x", mcp.ServerConfig{Command: "a", Headers: map[string]string{"A": "b"}}, "for HTTP servers"},
		{"bad header", "x", mcp.ServerConfig{URL: "http://h/", Headers: map[string]string{"A": "b\nc"}}, "not a valid header"},
		{"bad env", "x", mcp.ServerConfig{Command: "a", Env: map[string]string{"A=B": "c"}}, "not a variable name"},
		{"cwd leaves", "x", mcp.ServerConfig{Command: "a", Cwd: "../up"}, "leaves the workspace"},
		{"call timeout", "x", mcp.ServerConfig{Command: "a", CallTimeout: configtype.Duration(time.Millisecond)}, "call_timeout must be 100ms..1h"},
		{"idle timeout", "x", mcp.ServerConfig{Command: "a", IdleTimeout: configtype.Duration(30 * 24 * time.Hour)}, "idle_timeout must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mcp.DefaultConfig()
			c.Servers = map[string]mcp.ServerConfig{tt.server: tt.cfg}
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *configtype.FieldError
			if !errors.As(err, &fe) || fe.Field != "servers" || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.server) {
				t.Fatalf("err = %v, want servers: …%s…", err, tt.want)
			}
		})
	}
	c := mcp.DefaultConfig()
	c.IdleTimeout = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "idle_timeout") {
		t.Fatalf("section idle_timeout 0: %v", err)
	}
}
