package sandbox

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// runnerEnv makes the test binary act as a raven process running one
// command (argv[2]) in the sandbox, so a test can kill -9 it mid-command.
const runnerEnv = "RAVEN_SANDBOX_TEST_RUNNER"

// TestMain doubles as the supervisor: the runner re-executes this test
// binary with SupervisorCommand, as the raven binary does in production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SupervisorCommand {
		os.Exit(Supervise())
	}
	if ws := os.Getenv(runnerEnv); ws != "" {
		os.Exit(runOne(ws, os.Args[1], os.Args[2]))
	}
	os.Exit(m.Run())
}

func runOne(ws, data, command string) int {
	r, err := New(Options{Workspace: ws, DataDir: data})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, err := r.Run(context.Background(), Command{Command: command, Timeout: time.Minute, Stdout: os.Stdout, Stderr: os.Stderr})
	fmt.Println(res, err)
	return 0
}
