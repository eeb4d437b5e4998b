package tools_test

import (
	"os"
	"testing"

	"github.com/raven-agent/raven/internal/sandbox"
)

// TestMain doubles as the exec sandbox supervisor: the exec tool re-executes
// the running binary with sandbox.SupervisorCommand, as raven does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	os.Exit(m.Run())
}
