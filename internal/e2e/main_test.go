package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// bin is the raven binary TestMain built for this run.
var bin Binary

// midday is this run's zone (see Zone): local 13:10 when the run started.
var midday Zone

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "raven-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if bin, err = Build(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if midday, err = WriteMiddayZone(dir, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newEnv is NewEnv on this run's binary.
func newEnv(t *testing.T, opts Options) *Env {
	t.Helper()
	return NewEnv(t, bin, opts)
}
