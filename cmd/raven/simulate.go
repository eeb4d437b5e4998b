package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/simulate"
)

func newSimulateCmd(g *globals) *cobra.Command {
	var o simulate.Options
	var compare string
	cmd := &cobra.Command{
		Use:   "simulate SCENARIO",
		Short: "Run a scenario (a simulated owner's week) through the runtime on a virtual clock and report",
		Long: "Plays a scenario file (YAML or JSON, see docs/simulate.md and examples/scenarios/) through\n" +
			"Raven's assembled runtime with the default config plus the scenario's overrides, on a virtual\n" +
			"clock: a week takes seconds. Reports nudges proposed, denied by layer and delivered, the owner's\n" +
			"acceptance, deadlines hit and missed, quiet-hour and duplicate deliveries, model calls and tokens\n" +
			"by origin, the adaptive multiplier, learned preferences and outbox waits.\n" +
			"--compare CONFIG runs the same owner (same seed) under a second config.json, side by side.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := simulate.Load(args[0])
			if err != nil {
				return usageErr(err)
			}
			if sc.Planner.Kind == simulate.PlannerModel {
				o.Model = g.model
				if o.Model == "" {
					// The owner's configured model is the one worth measuring.
					if _, cfg, err := g.loadConfig(); err == nil {
						o.Model = cfg.PlannerModel()
					}
				}
			}
			out := cmd.OutOrStdout()
			if compare == "" {
				rep, err := simulate.Run(cmd.Context(), sc, o)
				if err != nil {
					return simulateErr(err)
				}
				if g.json {
					return json.NewEncoder(out).Encode(rep)
				}
				return rep.WriteText(out)
			}
			// config.Load takes a missing file for the defaults; a
			// comparison against a file that is not there means a typo.
			if _, err := os.Stat(compare); err != nil {
				return usageErr(fmt.Errorf("--compare: %w", err))
			}
			other, err := config.Load(compare)
			if err != nil {
				return usageErr(err)
			}
			cmp, err := simulate.Compare(cmd.Context(), sc, o, other, compare)
			if err != nil {
				return simulateErr(err)
			}
			if g.json {
				return json.NewEncoder(out).Encode(cmp)
			}
			return simulate.WriteCompare(out, cmp.A, cmp.B)
		},
	}
	cmd.Flags().BoolVar(&g.json, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&compare, "compare", "", "a second config.json to run the same owner under, side by side")
	cmd.Flags().IntVar(&o.Days, "days", 0, "days to simulate (default: the scenario's)")
	cmd.Flags().Int64Var(&o.Seed, "seed", 0, "seed of the owner's choices (default: the scenario's)")
	cmd.Flags().StringVar(&o.Dir, "tmp-dir", os.TempDir(), "where to create the temporary data directory")
	return cmd
}

func simulateErr(err error) error {
	if errors.Is(err, simulate.ErrScenario) {
		return usageErr(err)
	}
	return fmt.Errorf("simulate: %w", err)
}
