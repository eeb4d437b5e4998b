package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadDefaultsAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	cfg, err := Load(p)
	if err != nil || cfg.Sentinel.Enabled || cfg.Gateway.UserPool != 4 {
		t.Fatalf("missing file: %+v %v (sentinel must default off)", cfg.Sentinel, err)
	}
	cases := []struct{ body, key, msg string }{
		{`{"model": "openai"}`, "model", "provider/model"},
		{`{"model": "bogus/x"}`, "model", "unknown provider"},
		{`{"agent": {"max_iterations": "many"}}`, "agent.max_iterations", "want int"},
		{`{"agent": {"max_iterations": 0}}`, "agent.max_iterations", "1..200"},
		{`{"sentinel": {"interval": "soon"}}`, "sentinel.interval", "bad duration"},
		{`{"sentinel": {"nope": 1}}`, "sentinel.nope", "unknown key"},
		{`{"model": ""}}`, "", "trailing data"},
		{`{} x`, "", "trailing data"},
		{`[]`, "", "want one JSON object"},
		{`{"nope": 1}`, "nope", "unknown key"},
		{`{"model": `, "", "malformed JSON"},
	}
	for _, c := range cases {
		os.WriteFile(p, []byte(c.body), 0o600)
		_, err := Load(p)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%s: err = %v, want *Error", c.body, err)
		}
		if ce.Key != c.key || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %q (key %q), want key %q and %q with the file name", c.body, err, ce.Key, c.key, c.msg)
		}
	}
}

func TestGetSet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := Set(p, "sentinel.enabled", "true"); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, "model", "ollama/qwen2.5:7b"); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, "heartbeat.interval", "45m"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Sentinel.Enabled || cfg.Model != "ollama/qwen2.5:7b" || cfg.Heartbeat.Interval.D() != 45*time.Minute {
		t.Fatalf("after set: %+v %q %v", cfg.Sentinel, cfg.Model, cfg.Heartbeat.Interval)
	}
	if v, err := Get(cfg, "sentinel.enabled"); err != nil || v != true {
		t.Fatalf("get = %v %v", v, err)
	}
	before, _ := os.ReadFile(p)
	for _, bad := range [][2]string{
		{"sentinel.enabled", "maybe"},
		{"heartbeat.interval", "soon"},
		{"agent.max_iterations", "0"},
		{"model", "nonsense"},
		{"no.such.key", "1"},
		{"sentinel", "x"},
	} {
		if err := Set(p, bad[0], bad[1]); err == nil {
			t.Errorf("set %s=%s accepted", bad[0], bad[1])
		}
	}
	after, _ := os.ReadFile(p)
	if string(before) != string(after) {
		t.Fatal("a rejected set changed the file")
	}
	if strings.Contains(string(after), "user_pool") {
		t.Fatal("defaults were written into the file")
	}
}

// TestLoadErrorsNameFullKey: a bad value in any section, loaded from the
// file, is an *Error naming its full dotted key.
func TestLoadErrorsNameFullKey(t *testing.T) {
	tests := []struct{ body, key string }{
		{`{"providers": {"timeout": "0s"}}`, "providers.timeout"},
		{`{"providers": {"openai": {"base_url": "x"}}}`, "providers.openai.base_url"},
		{`{"providers": {"ollama": {"nope": 1}}}`, "providers.ollama.nope"},
		{`{"agent": {"tool_timeout": "1ms"}}`, "agent.tool_timeout"},
		{`{"tools": {"exec": {"timeout": 5}}}`, "tools.exec.timeout"},
		{`{"tools": {"ask_user": {"timeout": "0s"}}}`, "tools.ask_user.timeout"},
		{`{"sentinel": {"planner_model": "x"}}`, "sentinel.planner_model"},
		{`{"sentinel": {"policy": {"day_quota": -1}}}`, "sentinel.policy.day_quota"},
		{`{"sentinel": {"policy": {"adaptive": {"gain": -1}}}}`, "sentinel.policy.adaptive.gain"},
		{`{"sentinel": {"policy": {"quiet_hours": {"start": "25:00"}}}}`, "sentinel.policy.quiet_hours.start"},
		{`{"sentinel": {"policy": {"quiet_hours": {"days": [7]}}}}`, "sentinel.policy.quiet_hours.days"},
		{`{"sentinel": {"policy": {"persona_dnd": [{"start": "09:00", "end": "10:00", "days": [1]}, {"days": [9]}]}}}`, "sentinel.policy.persona_dnd[1].days"},
		{`{"sentinel": {"policy": {"persona_dnd": [{"bogus": 1}]}}}`, "sentinel.policy.persona_dnd[0].bogus"},
		{`{"sentinel": {"behaviors": {"idle": "soon"}}}`, "sentinel.behaviors.idle"},
		{`{"cron": {"lock_timeout": "1ms"}}`, "cron.lock_timeout"},
		{`{"heartbeat": {"turn_timeout": "1s"}}`, "heartbeat.turn_timeout"},
		{`{"gateway": {"shutdown_grace": "-1s"}}`, "gateway.shutdown_grace"},
		{`{"channels": {"forward": ["Tele Gram"]}}`, "channels.forward"},
		{`{"channels": {"telegram": {"allow_from": ["x"]}}}`, "channels.telegram.allow_from[0]"},
		{`{"channels": {"webhook": {"max_attempts": 0}}}`, "channels.webhook.max_attempts"},
		{`{"log": {"level": "loud"}}`, "log.level"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(p, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v, want an *Error naming %s and the file", err, tt.key)
			}
		})
	}
}
