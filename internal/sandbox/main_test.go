package sandbox

import (
	"os"
	"testing"
)

// TestMain doubles as the supervisor: the runner re-executes this test
// binary with SupervisorCommand, as the raven binary does in production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SupervisorCommand {
		os.Exit(Supervise())
	}
	os.Exit(m.Run())
}
