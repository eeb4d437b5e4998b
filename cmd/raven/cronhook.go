//go:build !testhooks

package main

import "github.com/raven-agent/raven/internal/cron"

// cronTestHook is nil in release builds; see cronhook_testhooks.go.
func cronTestHook() func(cron.Handler) cron.Handler { return nil }
