package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the raven version",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						rev = " (" + s.Value[:12] + ")"
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "raven %s%s %s/%s %s\n", version, rev, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		},
	}
}
