package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/doctor"
	"github.com/raven-agent/raven/internal/runtime"
)

func newDoctorCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the data dir, config, model reachability, locks and database; say what to fix",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			cfg, cerr := config.Load(p.Config())
			if cerr == nil && g.model != "" {
				cfg.Model = g.model
			}
			checks := doctor.Run(cmd.Context(), doctor.Options{Paths: p, Config: cfg, ConfigErr: cerr, ModelEndpoint: runtime.ProbeEndpoint})
			failed := false
			for _, c := range checks {
				failed = failed || c.Status == doctor.Fail
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), checks); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				for _, c := range checks {
					fmt.Fprintf(w, "%-4s  %-20s %s\n", c.Status, c.Name, c.Detail)
					if c.Fix != "" && c.Status != doctor.OK {
						fmt.Fprintf(w, "      %-20s fix: %s\n", "", c.Fix)
					}
				}
			}
			if failed {
				return errors.New("doctor found problems (see above)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}
