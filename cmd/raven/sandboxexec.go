package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/sandbox"
)

// newSandboxExecCmd is the hidden entry the exec tool re-executes raven
// with: the supervisor that confines one command and outlives none of it.
// It takes its instructions from a pipe, never from flags.
func newSandboxExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:                sandbox.SupervisorCommand,
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		Run: func(*cobra.Command, []string) {
			os.Exit(sandbox.Supervise())
		},
	}
}
