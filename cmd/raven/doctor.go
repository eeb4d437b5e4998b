package main

import (
	"context"
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
			servers, closeMCP := doctorMCP(cmd, p, cfg, cerr)
			defer closeMCP()
			checks := doctor.Run(cmd.Context(), doctor.Options{Paths: p, Config: cfg, ConfigErr: cerr, ModelEndpoint: runtime.ProbeEndpoint,
				MCP: servers})
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

// doctorMCP is the MCP client doctor starts each configured server with:
// the runtime's, built without a model or loops. A runtime that cannot be
// built fails every server's check with its error.
func doctorMCP(cmd *cobra.Command, p config.Paths, cfg config.Config, cerr error) (doctor.MCPServers, func()) {
	if cerr != nil || len(cfg.MCP.Servers) == 0 {
		return nil, func() {}
	}
	rt, err := runtime.Build(cmd.Context(), runtime.Options{Paths: p, Config: cfg, NoModel: true, Logger: quietLogger(cmd.ErrOrStderr(), cfg)})
	if err != nil {
		return brokenMCP{names: cfg.MCP.Names(), err: err}, func() {}
	}
	return rt.MCP(), func() { rt.Close(context.WithoutCancel(cmd.Context())) }
}

type brokenMCP struct {
	names []string
	err   error
}

func (b brokenMCP) Names() []string                            { return b.names }
func (b brokenMCP) Check(context.Context, string) (int, error) { return 0, b.err }
