package wake

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the child roles of the multi-process tests when the test
// binary is re-executed with triggerChildEnv set.
func TestMain(m *testing.M) {
	if role := os.Getenv(triggerChildEnv); role != "" {
		os.Exit(runTriggerChild(role))
	}
	goleak.VerifyTestMain(m)
}
