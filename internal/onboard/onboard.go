// Package onboard lays out a fresh Raven data directory: config, workspace
// files and the local operator token. It is idempotent and never overwrites
// a file the owner has edited.
package onboard

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// MemoryTemplate is the MEMORY.md onboarding writes.
const MemoryTemplate = `# Memory

Things Raven should always remember about you. Edit freely; Raven reads this file on every turn.

- Name:
- Time zone:
- Preferences:
`

// ConfigTemplate is the config.json onboarding writes: only the keys an
// owner usually sets; every other key keeps its documented default.
const ConfigTemplate = `{
  "model": "",
  "sentinel": {
    "enabled": false
  }
}
`

// Step reports what onboarding did with one file.
type Step struct {
	Path    string
	Created bool
}

// Run creates whatever is missing under p. Existing files are left as they are.
func Run(ctx context.Context, p config.Paths) ([]Step, error) {
	for _, d := range []string{p.Root, p.Workspace(), p.UserMemory(), p.SentinelDir(), p.CronDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("onboard: %w", err)
		}
	}
	var steps []Step
	files := []struct{ path, body string }{
		{p.Config(), ConfigTemplate},
		{p.Memory(), MemoryTemplate},
		{p.Heartbeat(), heartbeat.Template},
	}
	for _, f := range files {
		created, err := createIfMissing(f.path, f.body)
		if err != nil {
			return steps, err
		}
		steps = append(steps, Step{Path: f.path, Created: created})
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return steps, err
	}
	defer db.Close()
	st, err := auth.NewStore(ctx, db, clock.Real())
	if err != nil {
		return steps, err
	}
	created, err := st.EnsureOperatorToken(ctx, p.OperatorToken())
	if err != nil {
		return steps, err
	}
	steps = append(steps, Step{Path: p.OperatorToken(), Created: created})
	return steps, nil
}

// createIfMissing writes body to path only when no file is there (O_EXCL,
// so two concurrent onboards cannot both write).
func createIfMissing(path, body string) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("onboard: create %s: %w", path, err)
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return false, fmt.Errorf("onboard: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, fmt.Errorf("onboard: sync %s: %w", path, err)
	}
	return true, f.Close()
}
