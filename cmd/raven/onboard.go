package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/onboard"
)

func newOnboardCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "onboard",
		Short: "Create the data directory (config, workspace files, operator token); safe to re-run",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			steps, err := onboard.Run(cmd.Context(), p)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, s := range steps {
				state := "kept   "
				if s.Created {
					state = "created"
				}
				fmt.Fprintf(w, "%s %s\n", state, s.Path)
			}
			fmt.Fprintf(w, "\nNext: raven config set model ollama/qwen2.5:7b   (or openai/..., anthropic/...)\n      raven chat\n")
			return nil
		},
	}
}
