package config

import "github.com/raven-agent/raven/internal/usage"

// UsageConfig is the "usage" section (caps and prices); package usage owns
// it and its defaults.
type UsageConfig = usage.Config
