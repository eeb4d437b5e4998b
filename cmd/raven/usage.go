package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/usage"
)

func newUsageCmd(g *globals) *cobra.Command {
	var since, by string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show the model calls Raven made — tokens, cost, silent ticks — and spend against the caps",
		Long: `Shows every model call Raven recorded since --since (a date such as 2026-12-01,
or a duration back from now: 7d, 24h, 90m; default 7d), grouped by origin
(user, sentinel, heartbeat, cron, subagent, discovery, extractor, router, answer),
model or day, with input, cached and output tokens, the silent ticks (Sentinel or
heartbeat calls whose tick delivered nothing) and the cost from usage.prices.
Then each cap of usage.caps against its day's or month's spend. Runs beside a gateway.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			now, loc := time.Now(), time.Local
			from, err := usage.ParseSince(since, now, loc)
			if err != nil {
				return usageErr(err)
			}
			if by != usage.ByOrigin && by != usage.ByModel && by != usage.ByDay {
				return usageErr(usage.ErrBadGrouping)
			}
			rep := usage.Report{Since: from, By: by, Rows: []usage.Row{}, Total: usage.Row{Key: "total"}}
			if _, err := os.Stat(p.DB()); !errors.Is(err, fs.ErrNotExist) {
				db, err := sqlitedb.Open(p.DB())
				if err != nil {
					return err
				}
				defer db.Close()
				st, err := usage.Open(cmd.Context(), db, slog.New(slog.DiscardHandler))
				if err != nil {
					return err
				}
				defer st.Close()
				if rep, err = st.BuildReport(cmd.Context(), cfg.Usage, from, now, by, loc); err != nil {
					return err
				}
			}
			if asJSON || g.json {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			return rep.WriteText(cmd.OutOrStdout(), loc)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "a date (2026-12-01) or a duration back from now (7d, 24h); default 7d")
	cmd.Flags().StringVar(&by, "by", usage.ByOrigin, "group by origin, model or day")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
