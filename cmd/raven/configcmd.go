package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
)

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Read or change config.json by dotted key (e.g. sentinel.enabled)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "get KEY",
		Short: "Print the effective value of KEY (defaults included)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			v, err := config.Get(cfg, args[0])
			if err != nil {
				return usageErr(err)
			}
			if s, ok := v.(string); ok {
				fmt.Fprintln(cmd.OutOrStdout(), s)
				return nil
			}
			b, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return nil
		},
	}, &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set KEY to VALUE after validating the whole file; nothing is written on error",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			if err := config.Set(p.Config(), args[0], args[1]); err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s = %s\n", args[0], args[1])
			return nil
		},
	}, &cobra.Command{
		Use:   "path",
		Short: "Print the config file's path",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), p.Config())
			return nil
		},
	})
	return cmd
}
