package channels

import (
	"errors"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/configtype"
)

func TestChannelsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(c *Config)
		wantKey string
	}{
		{"defaults valid", func(c *Config) {}, ""},
		{"telegram needs allow list", func(c *Config) { c.Telegram.Enabled = true }, "telegram.allow_from"},
		{"telegram ids positive", func(c *Config) { c.Telegram.AllowFrom = []int64{-5} }, "telegram.allow_from"},
		{"telegram ok", func(c *Config) { c.Telegram.Enabled, c.Telegram.AllowFrom = true, []int64{42} }, ""},
		{"telegram api url absolute", func(c *Config) { c.Telegram.APIURL = "localhost:8081" }, "telegram.api_url"},
		{"telegram api url ok", func(c *Config) { c.Telegram.APIURL = "http://127.0.0.1:8081" }, ""},
		{"hook name", func(c *Config) { c.Webhook.Name = "../x" }, "webhook.name"},
		{"hook name empty", func(c *Config) { c.Webhook.Name = "" }, "webhook.name"},
		{"hook name too long", func(c *Config) { c.Webhook.Name = strings.Repeat("a", 65) }, "webhook.name"},
		{"hook name longest", func(c *Config) { c.Webhook.Name = strings.Repeat("a", 64) }, ""},
		{"hook name charset", func(c *Config) { c.Webhook.Name = "My_hook-2" }, ""},
		{"hook name unicode", func(c *Config) { c.Webhook.Name = "hoök" }, "webhook.name"},
		{"outbound url", func(c *Config) { c.Webhook.OutboundURL = "ftp://x" }, "webhook.outbound_url"},
		{"listen", func(c *Config) { c.Webhook.Enabled, c.Webhook.Listen = true, "8787" }, "webhook.listen"},
		{"window", func(c *Config) { c.Webhook.Window = 0 }, "webhook.window"},
		{"body cap", func(c *Config) { c.Webhook.MaxBody = 1 }, "webhook.max_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			var ce *configtype.FieldError
			switch {
			case tt.wantKey == "" && err != nil:
				t.Fatalf("unexpected %v", err)
			case tt.wantKey != "" && (!errors.As(err, &ce) || ce.Field != tt.wantKey):
				t.Fatalf("err %v, want key %s", err, tt.wantKey)
			}
		})
	}
}

func TestChannelSecretsFromEnv(t *testing.T) {
	env := map[string]string{EnvWebhookSecret: "from-env"}
	getenv := func(k string) string { return env[k] }
	w := WebhookConfig{Secret: "from-file"}
	if got := w.EffectiveSecret(getenv); got != "from-env" {
		t.Fatalf("secret %q", got)
	}
	tg := TelegramConfig{Token: "file-token"}
	if got := tg.EffectiveToken(getenv); got != "file-token" {
		t.Fatalf("token %q", got)
	}
}
