package simulate

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/sandbox"
)

func TestMain(m *testing.M) {
	// The exec tool re-executes this binary as its sandbox supervisor.
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	goleak.VerifyTestMain(m)
}
