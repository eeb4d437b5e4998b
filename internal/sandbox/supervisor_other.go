//go:build !linux

package sandbox

import (
	"fmt"
	"os"
)

// SupervisorCommand is the hidden argument the raven binary re-executes
// itself with.
const SupervisorCommand = "__sandbox-exec"

// Supervise refuses: there is no sandbox off Linux.
func Supervise() int {
	fmt.Fprintln(os.Stderr, "raven sandbox: not supported on this platform")
	return 70
}
