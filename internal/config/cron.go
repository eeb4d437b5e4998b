package config

import "github.com/raven-agent/raven/internal/cron"

// CronConfig is the "cron" section; package cron owns it and its defaults.
type CronConfig = cron.Config
