package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/attention"
)

type attentionReport struct {
	Path      string           `json:"path"`
	Deadlines []attention.Item `json:"deadlines"`
	Content   string           `json:"content"`
}

func newAttentionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "Refresh and show attention.md: the deadlines Raven sees, with what each informal date was read from",
		Long: "Refreshes user_memory/attention.md (when sentinel.attention is on) and prints it. Deadlines are\n" +
			"found the way people write them (Friday 15:00, tomorrow, in 3 days, 15 Dec, 12/15 — read per\n" +
			"sentinel.date_order) and resolved against when the line was written; each informal one says\n" +
			"what it was read from. --json lists the deadlines with their resolved times.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			sys, p, done, err := sentinelEnv(ctx, g, nil)
			if err != nil {
				return err
			}
			defer done()
			if sys.Attention != nil {
				sys.Attention.Update(ctx)
			}
			rep := attentionReport{Path: p.Attention(), Deadlines: sys.Deadlines(ctx)}
			if rep.Deadlines == nil {
				rep.Deadlines = []attention.Item{}
			}
			content, err := memory.ReadWhole(rep.Path, attention.DefaultMaxBytes)
			if err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("read %s: %w", rep.Path, err)
			}
			rep.Content = content
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, rep)
			}
			if sys.Attention == nil {
				fmt.Fprintln(out, "(sentinel.attention is off: attention.md is not refreshed)")
			}
			if len(rep.Deadlines) == 0 {
				fmt.Fprintln(out, "(no deadline within sentinel.deadline_horizon)")
			}
			fmt.Fprintf(out, "%s:\n%s", rep.Path, content)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
