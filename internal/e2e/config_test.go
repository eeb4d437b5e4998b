package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// §4.1: `raven config get|set` reach the optional keys they used to refuse
// as unknown, and `config list --json` lists each with its type, default
// and effective value (secrets masked).
func TestConfigReachesOptionalKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	cases := []struct {
		key, value, get string // get: what `config get` prints (default value)
		list            any    // the effective value `config list --json` shows
	}{
		{"channels.forward", "webhook:owner,telegram:42", `["webhook:owner","telegram:42"]`, []any{"webhook:owner", "telegram:42"}},
		{"heartbeat.channel", "webhook", "", "webhook"},
		{"channels.webhook.enabled", "true", "", true},
		{"channels.webhook.listen", "127.0.0.1:0", "", "127.0.0.1:0"},
		{"channels.webhook.secret", "s3cret", "", "(set, hidden)"},
		{"channels.webhook.outbound_url", "http://127.0.0.1:9/hook", "", "http://127.0.0.1:9/hook"},
		{"channels.telegram.allow_from", "42", "[42]", []any{42.0}},
		{"channels.telegram.token", "123:abc", "", "(set, hidden)"},
		{"channels.telegram.api_url", "http://127.0.0.1:9/tg", "", "http://127.0.0.1:9/tg"},
		// The TCP listener is TLS only: its key needs the cert and key first.
		{"gateway.tls_cert", e.Path("cert.pem"), "", e.Path("cert.pem")},
		{"gateway.tls_key", e.Path("key.pem"), "", e.Path("key.pem")},
		{"gateway.tcp_listen", "127.0.0.1:7443", "", "127.0.0.1:7443"},
		{"sentinel.planner_model", "openai/gpt-5-mini", "", "openai/gpt-5-mini"},
		{"providers.openai.base_url", "http://127.0.0.1:9/v1", "", "http://127.0.0.1:9/v1"},
		{"providers.ollama.base_url", "http://127.0.0.1:11434", "", "http://127.0.0.1:11434"},
	}
	for _, c := range cases {
		if r := e.Run("config", "set", c.key, c.value); r.Code != 0 {
			t.Errorf("config set %s: %s", c.key, r)
			continue
		}
		want := c.get
		if want == "" {
			want = c.value
		}
		if r := e.Run("config", "get", c.key); r.Code != 0 || strings.TrimSpace(r.Stdout) != want {
			t.Errorf("config get %s: want %q, got %s", c.key, want, r)
		}
	}
	var list []struct {
		Key     string `json:"key"`
		Type    string `json:"type"`
		Default any    `json:"default"`
		Value   any    `json:"value"`
	}
	e.MustRun("config", "list", "--json").JSON(t, &list)
	byKey := map[string]int{}
	for i, k := range list {
		byKey[k.Key] = i
	}
	for _, c := range cases {
		i, ok := byKey[c.key]
		if !ok {
			t.Errorf("config list lacks %s", c.key)
			continue
		}
		got, _ := json.Marshal(list[i].Value)
		want, _ := json.Marshal(c.list)
		if string(got) != string(want) || list[i].Type == "" {
			t.Errorf("config list %s: type %q value %s, want value %s", c.key, list[i].Type, got, want)
		}
	}
	if i, ok := byKey["sentinel.policy.session_cooldown"]; !ok || list[i].Type != "duration" || list[i].Default == nil {
		t.Errorf("config list: session_cooldown entry %+v", list[i])
	}
	if r := e.Run("config", "set", "gateway.tls_key", ""); r.Code != 2 || !strings.Contains(r.Stderr, "gateway.tcp_listen") {
		t.Errorf("dropping the key of a TCP listener: %s", r)
	}
}

// §4.1: config.json with trailing data (`}}`) is refused with exit 2 by
// every command that loads it, naming the file; nothing is rewritten.
func TestConfigTrailingDataRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	bad := strings.TrimRight(e.ReadFile("config.json"), "\n") + "}\n"
	e.WriteFile("config.json", bad)
	for _, args := range [][]string{{"config", "get", "model"}, {"config", "set", "heartbeat.enabled", "false"}, {"sentinel", "status"}, {"gateway"}} {
		r := e.Run(args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "trailing data") || !strings.Contains(r.Stderr, e.Path("config.json")) {
			t.Errorf("config.json ending in }}: %s", r)
		}
	}
	if b, _ := os.ReadFile(e.Path("config.json")); string(b) != bad {
		t.Fatalf("config.json was rewritten:\n%s", b)
	}
}
