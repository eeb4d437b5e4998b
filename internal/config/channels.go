package config

import "github.com/raven-agent/raven/internal/channels"

// The "channels" section; package channels owns its types, defaults and
// checks.
type (
	ChannelsConfig = channels.Config
	WebhookConfig  = channels.WebhookConfig
	TelegramConfig = channels.TelegramConfig
)

// EnvWebhookSecret and EnvTelegramToken name the environment variables that
// override the secrets in the file.
const (
	EnvWebhookSecret = channels.EnvWebhookSecret
	EnvTelegramToken = channels.EnvTelegramToken
)
