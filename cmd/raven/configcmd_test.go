package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
)

// TestConfigCommandReachesOptionalKeys drives `raven config` as the owner
// does, for the keys the README names that used to be refused as unknown.
func TestConfigCommandReachesOptionalKeys(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		args     []string
		wantExit int
		wantOut  string
	}{
		{[]string{"config", "set", "channels.forward", "telegram:123,webhook:x"}, 0, `channels.forward = ["telegram:123","webhook:x"]`},
		{[]string{"config", "get", "channels.forward"}, 0, `["telegram:123","webhook:x"]`},
		{[]string{"config", "set", "heartbeat.channel", "telegram"}, 0, "heartbeat.channel = telegram"},
		{[]string{"config", "set", "channels.webhook.outbound_url", "https://example.com/in"}, 0, "channels.webhook.outbound_url = https://example.com/in"},
		{[]string{"config", "set", "channels.telegram.allow_from", "42"}, 0, "channels.telegram.allow_from = [42]"},
		{[]string{"config", "set", "gateway.tls_cert", "/c.pem"}, 0, ""},
		{[]string{"config", "set", "gateway.tls_key", "/k.pem"}, 0, ""},
		{[]string{"config", "set", "gateway.tcp_listen", "127.0.0.1:9443"}, 0, "gateway.tcp_listen = 127.0.0.1:9443"},
		{[]string{"config", "set", "sentinel.planner_model", "ollama/qwen2.5:7b"}, 0, "sentinel.planner_model = ollama/qwen2.5:7b"},
		{[]string{"config", "set", "providers.ollama.base_url", "http://127.0.0.1:11434"}, 0, ""},
		{[]string{"config", "get", "providers.ollama.base_url"}, 0, "http://127.0.0.1:11434"},
		{[]string{"config", "set", "channels.telegram.token", "123:abc"}, 0, "channels.telegram.token = (set, hidden)"},
		{[]string{"config", "get", "heartbeat.chat_id"}, 0, ""},
		{[]string{"config", "set", "heartbeat.interval", "soon"}, 2, "heartbeat.interval: want a duration"},
		{[]string{"config", "set", "gateway.tcp_listen", "9443"}, 2, "gateway.tcp_listen: want host:port"},
		{[]string{"config", "set", "sentinel.planner_model", "bogus/x"}, 2, "sentinel.planner_model: unknown provider"},
		{[]string{"config", "set", "channels.nope", "1"}, 2, "channels.nope: unknown key (known here: forward, telegram, webhook)"},
		{[]string{"config", "set", "channels.webhook", "1"}, 2, "channels.webhook: is a section"},
		{[]string{"config", "unset", "heartbeat.channel"}, 0, `heartbeat.channel = ""`},
		{[]string{"config", "set", "sentinel.policy.day_quota", "-1"}, 2, "sentinel.policy.day_quota: policy: invalid config: day_quota must be >= 0"},
		{[]string{"config", "set", "cron.decay_after", "-1"}, 2, "cron.decay_after: must be 0 (off) or positive"},
	}
	for _, s := range steps {
		out, err := runRaven(t, "", append([]string{"--data-dir", dir}, s.args...)...)
		if code := exitCode(err); code != s.wantExit {
			t.Fatalf("%v: exit %d (%v), want %d\n%s", s.args, code, err, s.wantExit, out)
		}
		msg := out
		if err != nil {
			msg += err.Error()
		}
		if !strings.Contains(msg, s.wantOut) {
			t.Fatalf("%v: output %q, want %q", s.args, msg, s.wantOut)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.TCPListen != "127.0.0.1:9443" || cfg.Sentinel.PlannerModel != "ollama/qwen2.5:7b" || len(cfg.Channels.Forward) != 2 || cfg.Heartbeat.Channel != "" {
		t.Fatalf("file after the commands: %+v", cfg)
	}
}

func TestConfigListEveryKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := runRaven(t, "", "--data-dir", dir, "config", "set", "providers.openai.api_key", "sk-secret"); err != nil {
		t.Fatal(err)
	}
	out, err := runRaven(t, "", "--data-dir", dir, "config", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []keyRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	keys := config.Keys()
	if len(rows) != len(keys) {
		t.Fatalf("%d rows for %d keys", len(rows), len(keys))
	}
	byKey := map[string]keyRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	if r := byKey["heartbeat.interval"]; r.Type != "duration" || string(r.Default) != `"30m"` || string(r.Value) != `"30m"` {
		t.Fatalf("heartbeat.interval row %+v", r)
	}
	if r := byKey["providers.openai.api_key"]; !r.Secret || strings.Contains(out, "sk-secret") {
		t.Fatalf("the api key is not masked: %+v", r)
	}
	text, err := runRaven(t, "", "--data-dir", dir, "config", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(text, "\n"+k.Name+" ") {
			t.Fatalf("config list does not show %s", k.Name)
		}
	}
	if !strings.Contains(text, "channels.forward") || strings.Contains(text, "sk-secret") {
		t.Fatalf("list:\n%s", text)
	}
}

func TestConfigLoadRefusesTrailingData(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"sentinel": {"enabled": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := runRaven(t, "", "--data-dir", dir, "config", "get", "sentinel.enabled")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "trailing data") {
		t.Fatalf("a config.json ending in }} loaded: %v", err)
	}
}

// TestDoctorMissingDataDir: the doctor reports a missing data dir and
// config file without creating either.
func TestDoctorMissingDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	out, err := runRaven(t, "", "--data-dir", dir, "doctor")
	if exitCode(err) != 1 {
		t.Fatalf("exit %d (%v), want 1\n%s", exitCode(err), err, out)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Fatalf("doctor created %s (%v)", dir, serr)
	}
	for _, want := range []string{"fail  data dir", dir + " does not exist", "warn  config", "is missing; every key has its default"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ok    config") {
		t.Fatalf("doctor says ok for a config file that does not exist:\n%s", out)
	}
}

func TestDoctorConfigStates(t *testing.T) {
	tests := []struct {
		name     string
		file     string // "" : no config.json
		wantLine string
		wantExit int // warnings alone exit 0, any failure 1
	}{
		{"missing file", "", "warn  config", 0},
		{"valid file", `{"log": {"level": "debug"}}`, "ok    config", 0},
		{"bad key", `{"cron": {"max_sleep": "2h"}}`, "fail  config", 1},
		{"trailing data", `{"log": {"level": "debug"}}}`, "fail  config", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runRaven(t, "", "--data-dir", dir, "doctor")
			if !strings.Contains(out, tt.wantLine) {
				t.Fatalf("output lacks %q (err %v):\n%s", tt.wantLine, err, out)
			}
			if exitCode(err) != tt.wantExit {
				t.Fatalf("exit %d (%v), want %d:\n%s", exitCode(err), err, tt.wantExit, out)
			}
			if tt.name == "bad key" && !strings.Contains(out, "cron.max_sleep") {
				t.Fatalf("bad key not named:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "gateway.lock")); !os.IsNotExist(err) {
				t.Fatalf("doctor created gateway.lock (%v)", err)
			}
		})
	}
}
