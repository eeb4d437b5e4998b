package config

// ChannelsConfig configures chat channels.
type ChannelsConfig struct {
	// Forward lists the real channels ("telegram:12345") that proactive
	// messages addressed to an ephemeral channel (cli, tui) expand to.
	Forward []string `json:"forward,omitempty"`
}

func defaultChannels() ChannelsConfig { return ChannelsConfig{} }

func (c ChannelsConfig) validate() error { return nil }
