//go:build testhooks

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/raven-agent/raven/internal/cron"
)

// cronTestHook exists only in binaries built with -tags testhooks (the cron
// process tests). With RAVEN_CRON_TEST_BLOCK_DIR set, every fire marks
// itself in that dir and blocks until its context ends, so a test can
// kill -9 the process while it holds a claim.
func cronTestHook() func(cron.Handler) cron.Handler {
	dir := os.Getenv("RAVEN_CRON_TEST_BLOCK_DIR")
	if dir == "" {
		return nil
	}
	return func(cron.Handler) cron.Handler {
		return func(ctx context.Context, job cron.Job, at time.Time) (cron.Outcome, error) {
			name := filepath.Join(dir, fmt.Sprintf("fired-%s-%d", job.ID, os.Getpid()))
			if err := os.WriteFile(name, []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
				return cron.Outcome{}, err
			}
			<-ctx.Done()
			return cron.Outcome{Status: cron.StatusError}, ctx.Err()
		}
	}
}
