package channels

import (
	"net"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// The defaults of the channels section; the webhook handler and outlet
// apply the same ones to zero options.
const (
	DefaultWebhookListen      = "127.0.0.1:8787"
	DefaultWebhookName        = "raven"
	DefaultWebhookWindow      = 5 * time.Minute
	DefaultWebhookMaxBody     = 64 << 10
	DefaultWebhookMaxAttempts = 5
)

// EnvWebhookSecret and EnvTelegramToken name the environment variables that
// override the secrets in the file.
const (
	EnvWebhookSecret = "RAVEN_WEBHOOK_SECRET"
	EnvTelegramToken = "RAVEN_TELEGRAM_TOKEN"
)

// Config is the "channels" section of config.json.
type Config struct {
	// Forward lists the real channels ("telegram:12345") that proactive
	// messages addressed to an ephemeral channel (cli, tui) expand to.
	Forward  []string       `json:"forward,omitempty"`
	Webhook  WebhookConfig  `json:"webhook"`
	Telegram TelegramConfig `json:"telegram"`
}

// WebhookConfig configures the signed HTTP webhook channel.
type WebhookConfig struct {
	Enabled bool `json:"enabled"`
	// Listen is the address of the inbound HTTP listener; inbound hooks
	// arrive at POST /hooks/<name>.
	Listen string `json:"listen"`
	// Name is the hook name in the inbound path.
	Name string `json:"name"`
	// Secret is the shared HMAC-SHA256 key. RAVEN_WEBHOOK_SECRET wins.
	Secret string `json:"secret,omitempty" config:"secret"`
	// OutboundURL receives replies and proactive messages; empty disables
	// outbound delivery.
	OutboundURL string `json:"outbound_url,omitempty"`
	// Window is how far a signature timestamp may be from now.
	Window configtype.Duration `json:"window"`
	// MaxBody caps an inbound body in bytes.
	MaxBody int64 `json:"max_body"`
	// MaxAttempts bounds outbound delivery attempts.
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
	// AllowChats lists further chats (groups) Raven may write to; replies
	// and proactive messages to any other chat are refused. A chat an
	// allowed user writes from is reachable until the gateway restarts.
	AllowChats []int64 `json:"allow_chats,omitempty"`
	// APIURL overrides the Bot API base URL (default Telegram's), for a
	// self-hosted Bot API server or a local fake in tests.
	APIURL string `json:"api_url,omitempty"`
	// Stream sends a reply's first words at once and edits the message as
	// it grows (when agent.stream is on); false sends each reply once,
	// whole, when it is complete.
	Stream bool `json:"stream"`
	// StreamInterval is the least time between two edits of a streamed
	// reply (Telegram rate-limits edits).
	StreamInterval configtype.Duration `json:"stream_interval"`
}

// DefaultConfig returns the documented defaults (every channel off).
func DefaultConfig() Config {
	return Config{
		Webhook: WebhookConfig{
			Listen:      DefaultWebhookListen,
			Name:        DefaultWebhookName,
			Window:      configtype.Duration(DefaultWebhookWindow),
			MaxBody:     DefaultWebhookMaxBody,
			MaxAttempts: DefaultWebhookMaxAttempts,
		},
		Telegram: TelegramConfig{Stream: true, StreamInterval: configtype.Duration(DefaultTelegramStreamInterval)},
	}
}

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

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c Config) Validate() error {
	w := c.Webhook
	switch {
	case !validHookName(w.Name):
		return configtype.Invalid("webhook.name", "must be 1..64 of A-Z a-z 0-9 _ -")
	case w.Window.D() < time.Second || w.Window.D() > time.Hour:
		return configtype.Invalid("webhook.window", "must be 1s..1h")
	case w.MaxBody < 256 || w.MaxBody > 16<<20:
		return configtype.Invalid("webhook.max_body", "must be 256..16777216 bytes")
	case w.MaxAttempts < 1 || w.MaxAttempts > 20:
		return configtype.Invalid("webhook.max_attempts", "must be 1..20")
	case c.Telegram.StreamInterval.D() < 500*time.Millisecond || c.Telegram.StreamInterval.D() > time.Minute:
		return configtype.Invalid("telegram.stream_interval", "must be 500ms..1m")
	}
	if w.Enabled || w.Listen != "" {
		if _, _, err := net.SplitHostPort(w.Listen); err != nil {
			return configtype.Invalid("webhook.listen", "want host:port: %v", err)
		}
	}
	if w.OutboundURL != "" && !configtype.AbsoluteHTTP(w.OutboundURL) {
		return configtype.Invalid("webhook.outbound_url", "want an absolute http(s) URL")
	}
	if !configtype.OneLine(w.Secret) {
		return configtype.Invalid("webhook.secret", "must be one line without control characters")
	}
	if !configtype.OneLine(c.Telegram.Token) {
		return configtype.Invalid("telegram.token", "must be one line without control characters")
	}
	for _, f := range c.Forward {
		ch, chat, _ := strings.Cut(f, ":")
		if !configtype.ChannelName(ch) || len(chat) > 256 || !configtype.OneLine(chat) {
			return configtype.Invalid("forward", "%q: want channel or channel:chat_id (channel in lowercase letters, digits, - and _)", f)
		}
	}
	if c.Telegram.Enabled && len(c.Telegram.AllowFrom) == 0 {
		return configtype.Invalid("telegram.allow_from", "an enabled telegram channel needs at least one allowed user id")
	}
	if u := c.Telegram.APIURL; u != "" && !configtype.AbsoluteHTTP(u) {
		return configtype.Invalid("telegram.api_url", "want an absolute http(s) URL")
	}
	for _, id := range c.Telegram.AllowChats {
		if id == 0 {
			return configtype.Invalid("telegram.allow_chats", "chat id 0 is not a chat")
		}
	}
	for _, id := range c.Telegram.AllowFrom {
		if id <= 0 {
			return configtype.Invalid("telegram.allow_from", "user id %d must be positive", id)
		}
	}
	return nil
}
