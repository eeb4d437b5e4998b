package config

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// ChannelsConfig configures chat channels.
type ChannelsConfig struct {
	// Forward lists the real channels ("telegram:12345") that proactive
	// messages addressed to an ephemeral channel (cli, tui) expand to.
	Forward  []string       `json:"forward,omitempty"`
	Webhook  WebhookConfig  `json:"webhook"`
	Telegram TelegramConfig `json:"telegram"`
}

// WebhookConfig configures the signed HTTP webhook channel.
type WebhookConfig struct {
	Enabled bool `json:"enabled"`
	// Listen is the address of the inbound HTTP listener (default
	// 127.0.0.1:8787); inbound hooks arrive at POST /hooks/<name>.
	Listen string `json:"listen"`
	// Name is the hook name in the inbound path (default "raven").
	Name string `json:"name"`
	// Secret is the shared HMAC-SHA256 key. RAVEN_WEBHOOK_SECRET wins.
	Secret string `json:"secret,omitempty" config:"secret"`
	// OutboundURL receives replies and proactive messages; empty disables
	// outbound delivery.
	OutboundURL string `json:"outbound_url,omitempty"`
	// Window is how far a signature timestamp may be from now (default 5m).
	Window Duration `json:"window"`
	// MaxBody caps an inbound body in bytes (default 64 KiB).
	MaxBody int64 `json:"max_body"`
	// MaxAttempts bounds outbound delivery attempts (default 5).
	MaxAttempts int `json:"max_attempts"`
}

// TelegramConfig configures the Telegram long-polling channel.
type TelegramConfig struct {
	Enabled bool `json:"enabled"`
	// Token is the Bot API token. RAVEN_TELEGRAM_TOKEN wins.
	Token string `json:"token,omitempty" config:"secret"`
	// AllowFrom lists the Telegram user ids Raven answers; everyone else
	// is refused. An enabled channel with an empty list is a config error,
	// so a forgotten list never opens the agent to strangers.
	AllowFrom []int64 `json:"allow_from,omitempty"`
	// APIURL overrides the Bot API base URL (default Telegram's), for a
	// self-hosted Bot API server or a local fake in tests.
	APIURL string `json:"api_url,omitempty"`
}

// EnvWebhookSecret and EnvTelegramToken name the environment variables that
// override the secrets in the file.
const (
	EnvWebhookSecret = "RAVEN_WEBHOOK_SECRET"
	EnvTelegramToken = "RAVEN_TELEGRAM_TOKEN"
)

// EffectiveSecret returns the webhook secret, the environment winning over
// the file. getenv is os.Getenv in production.
func (w WebhookConfig) EffectiveSecret(getenv func(string) string) string {
	if s := getenv(EnvWebhookSecret); s != "" {
		return s
	}
	return w.Secret
}

// EffectiveToken returns the bot token, the environment winning over the file.
func (t TelegramConfig) EffectiveToken(getenv func(string) string) string {
	if s := getenv(EnvTelegramToken); s != "" {
		return s
	}
	return t.Token
}

func defaultChannels() ChannelsConfig {
	return ChannelsConfig{
		Webhook: WebhookConfig{
			Listen:      "127.0.0.1:8787",
			Name:        "raven",
			Window:      Duration(5 * time.Minute),
			MaxBody:     64 << 10,
			MaxAttempts: 5,
		},
	}
}

// validHookName reports whether s is 1..64 of A-Z a-z 0-9 _ -. A loop, not
// a regexp: the counted repetition compiled at init cost every raven
// command 860 allocations and 0.4 ms of start-up.
func validHookName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (c ChannelsConfig) validate() error {
	w := c.Webhook
	switch {
	case !validHookName(w.Name):
		return &Error{Key: "channels.webhook.name", Msg: "must be 1..64 of A-Z a-z 0-9 _ -"}
	case w.Window < Duration(time.Second) || w.Window > Duration(time.Hour):
		return &Error{Key: "channels.webhook.window", Msg: "must be 1s..1h"}
	case w.MaxBody < 256 || w.MaxBody > 16<<20:
		return &Error{Key: "channels.webhook.max_body", Msg: "must be 256..16777216 bytes"}
	case w.MaxAttempts < 1 || w.MaxAttempts > 20:
		return &Error{Key: "channels.webhook.max_attempts", Msg: "must be 1..20"}
	}
	if w.Enabled || w.Listen != "" {
		if _, _, err := net.SplitHostPort(w.Listen); err != nil {
			return &Error{Key: "channels.webhook.listen", Msg: fmt.Sprintf("want host:port: %v", err)}
		}
	}
	if w.OutboundURL != "" && !absoluteHTTP(w.OutboundURL) {
		return &Error{Key: "channels.webhook.outbound_url", Msg: "want an absolute http(s) URL"}
	}
	if !oneLine(w.Secret) {
		return &Error{Key: "channels.webhook.secret", Msg: "must be one line without control characters"}
	}
	if !oneLine(c.Telegram.Token) {
		return &Error{Key: "channels.telegram.token", Msg: "must be one line without control characters"}
	}
	for _, f := range c.Forward {
		ch, chat, _ := strings.Cut(f, ":")
		if ch == "" || !channelNameOK(ch) || len(chat) > 256 || !oneLine(chat) {
			return &Error{Key: "channels.forward", Msg: fmt.Sprintf("%q: want channel or channel:chat_id (channel in lowercase letters, digits, - and _)", f)}
		}
	}
	if c.Telegram.Enabled && len(c.Telegram.AllowFrom) == 0 {
		return &Error{Key: "channels.telegram.allow_from", Msg: "an enabled telegram channel needs at least one allowed user id"}
	}
	if u := c.Telegram.APIURL; u != "" && !absoluteHTTP(u) {
		return &Error{Key: "channels.telegram.api_url", Msg: "want an absolute http(s) URL"}
	}
	for _, id := range c.Telegram.AllowFrom {
		if id <= 0 {
			return &Error{Key: "channels.telegram.allow_from", Msg: fmt.Sprintf("user id %d must be positive", id)}
		}
	}
	return nil
}
