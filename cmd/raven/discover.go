package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/wake"
)

// discoverResult is what `raven sentinel discover --json` prints.
type discoverResult struct {
	// Via is "gateway" (a trigger was queued for the running gateway) or
	// "local" (discovery ran in this process).
	Via       string           `json:"via"`
	TriggerID string           `json:"trigger_id,omitempty"`
	Result    *executor.Result `json:"result,omitempty"`
}

func newSentinelDiscoverCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "Run task discovery now: through the running gateway when there is one, else in this process",
		Long: "Asks the model for today's menu of things Raven could do and offers it where nudges go, through\n" +
			"the nudge policy like the daily run. With a gateway running, the request is queued for it\n" +
			"(sentinel/triggers.json) and the gateway delivers the menu on its channels; without one, discovery\n" +
			"runs here and only a terminal (cli) session can receive the menu. Runs even when\n" +
			"sentinel.discovery (the daily run) is off.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			running, pid, err := gateway.Running(p)
			if err != nil {
				return err
			}
			if running {
				if planner, ok := gatewayPlanner(cmd.Context(), p); ok && planner == "none" {
					return fmt.Errorf("%w (pid %s): task discovery needs one; set \"model\" or sentinel.planner_model and restart it", errGatewayNoModel, pid)
				}
				st := wake.NewTriggerStore(p.Triggers(), clock.Real(), quietLogger(cmd.ErrOrStderr(), cfg))
				t, err := st.Add(cmd.Context(), wake.TriggerDiscovery, "raven sentinel discover")
				var ce *wake.CorruptError
				if errors.As(err, &ce) {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", ce)
					t, err = st.Add(cmd.Context(), wake.TriggerDiscovery, "raven sentinel discover")
				}
				if err != nil {
					return err
				}
				if asJSON || g.json {
					return printJSON(out, discoverResult{Via: "gateway", TriggerID: t.ID})
				}
				fmt.Fprintf(out, "discovery requested (%s); the running gateway (pid %s) runs it within seconds and offers the menu on its channels\n", t.ID, pid)
				return nil
			}
			// With --json stdout is the result alone: the menu this
			// terminal receives goes to stderr.
			surface := out
			if asJSON || g.json {
				surface = cmd.ErrOrStderr()
			}
			sys, _, done, err := sentinelEnv(cmd.Context(), g, surface)
			if err != nil {
				return err
			}
			defer done()
			if sys.Discoverer == nil {
				return errors.New("no model configured: task discovery needs one (set \"model\" or sentinel.planner_model)")
			}
			res := sys.Runner.RunDiscovery(cmd.Context())
			if asJSON || g.json {
				if err := printJSON(out, discoverResult{Via: "local", Result: &res}); err != nil {
					return err
				}
			} else {
				printDiscovery(out, res)
			}
			if res.Error != "" {
				return errors.New(res.Error)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printDiscovery(w io.Writer, res executor.Result) {
	switch {
	case res.Delivered:
		fmt.Fprintf(w, "menu delivered (nudge %s); reply with a number to pick\n", res.NudgeID)
	case res.Verdict.Layer != "":
		fmt.Fprintf(w, "menu not delivered: denied by %s: %s\n", res.Verdict.Layer, res.Verdict.Reason)
	case res.Error != "":
		fmt.Fprintf(w, "discovery failed: %s\n", res.Error)
	default:
		fmt.Fprintf(w, "no menu: %s\n", res.Note)
	}
}

// errGatewayNoModel refuses a discovery the running gateway could not run.
var errGatewayNoModel = errors.New("sentinel discover: the running gateway has no model")

// gatewayPlanner asks the running gateway which planner model it runs;
// ok is false when its socket does not answer (then the request is queued
// as before: the gateway says what it did in its log).
func gatewayPlanner(ctx context.Context, p config.Paths) (string, bool) {
	tok, err := auth.ReadTokenFile(p.OperatorToken())
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := controlapi.Dial(ctx, p.Socket(), tok)
	if err != nil {
		return "", false
	}
	defer c.Close()
	st, err := controlapi.Invoke(ctx, c, api.GatewayStatus, api.Empty{})
	if err != nil || st.Gateway == nil {
		return "", false
	}
	return st.Gateway.PlannerModel, true
}
