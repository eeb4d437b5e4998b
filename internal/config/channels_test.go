package config

import (
	"errors"
	"strings"
	"testing"
)

func TestChannelsValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(c *ChannelsConfig)
		wantKey string
	}{
		{"defaults valid", func(c *ChannelsConfig) {}, ""},
		{"telegram needs allow list", func(c *ChannelsConfig) { c.Telegram.Enabled = true }, "channels.telegram.allow_from"},
		{"telegram ids positive", func(c *ChannelsConfig) { c.Telegram.AllowFrom = []int64{-5} }, "channels.telegram.allow_from"},
		{"telegram ok", func(c *ChannelsConfig) { c.Telegram.Enabled, c.Telegram.AllowFrom = true, []int64{42} }, ""},
		{"telegram api url absolute", func(c *ChannelsConfig) { c.Telegram.APIURL = "localhost:8081" }, "channels.telegram.api_url"},
		{"telegram api url ok", func(c *ChannelsConfig) { c.Telegram.APIURL = "http://127.0.0.1:8081" }, ""},
		{"hook name", func(c *ChannelsConfig) { c.Webhook.Name = "../x" }, "channels.webhook.name"},
		{"hook name empty", func(c *ChannelsConfig) { c.Webhook.Name = "" }, "channels.webhook.name"},
		{"hook name too long", func(c *ChannelsConfig) { c.Webhook.Name = strings.Repeat("a", 65) }, "channels.webhook.name"},
		{"hook name longest", func(c *ChannelsConfig) { c.Webhook.Name = strings.Repeat("a", 64) }, ""},
		{"hook name charset", func(c *ChannelsConfig) { c.Webhook.Name = "My_hook-2" }, ""},
		{"hook name unicode", func(c *ChannelsConfig) { c.Webhook.Name = "hoök" }, "channels.webhook.name"},
		{"outbound url", func(c *ChannelsConfig) { c.Webhook.OutboundURL = "ftp://x" }, "channels.webhook.outbound_url"},
		{"listen", func(c *ChannelsConfig) { c.Webhook.Enabled, c.Webhook.Listen = true, "8787" }, "channels.webhook.listen"},
		{"window", func(c *ChannelsConfig) { c.Webhook.Window = 0 }, "channels.webhook.window"},
		{"body cap", func(c *ChannelsConfig) { c.Webhook.MaxBody = 1 }, "channels.webhook.max_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultChannels()
			tt.edit(&c)
			err := c.validate()
			var ce *Error
			switch {
			case tt.wantKey == "" && err != nil:
				t.Fatalf("unexpected %v", err)
			case tt.wantKey != "" && (!errors.As(err, &ce) || ce.Key != tt.wantKey):
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
