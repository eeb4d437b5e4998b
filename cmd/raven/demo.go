package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/sim"
)

func newDemoCmd(g *globals) *cobra.Command {
	var o sim.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Offline showcase: a scripted day on a virtual clock (no model, no network)",
		Long: "Plays a scripted day through Raven's real runtime on a virtual clock and prints a timeline\n" +
			"of what the agent did and why. Model replies come from a script; nothing leaves the machine.\n" +
			"Sections: " + strings.Join(sim.SectionNames(), ", ") + ".",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := sim.Run(cmd.Context(), cmd.OutOrStdout(), o)
			if errors.Is(err, sim.ErrUnknownSection) {
				return usageErr(err)
			}
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			return nil
		},
	}
	_ = g // the demo never touches the owner's data dir
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print events as JSON lines")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the temporary data directory and print its path")
	cmd.Flags().StringVar(&o.Section, "section", "", "run one section only ("+strings.Join(sim.SectionNames(), ", ")+")")
	cmd.Flags().StringVar(&o.Dir, "tmp-dir", os.TempDir(), "where to create the temporary data directory")
	return cmd
}
