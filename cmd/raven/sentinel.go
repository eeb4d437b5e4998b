package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
)

func newSentinelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sentinel",
		Short: "Inspect and drive the proactive Sentinel (works with or without a gateway)",
	}
	cmd.AddCommand(newSentinelTickCmd(g), newSentinelStatusCmd(g), newSentinelExplainCmd(g), newSentinelPrefsCmd(g), newSentinelDiscoverCmd(g))
	return cmd
}

// sentinelEnv builds the runtime over the data dir's shared files, with
// no service running. out, when set, is this terminal attached as the
// cli:direct surface: the resolver sends a nudge there when no other
// surface or channel of this process can take it. close releases it.
func sentinelEnv(ctx context.Context, g *globals, out io.Writer) (sys *sentinel.System, p config.Paths, close func(), err error) {
	close = func() {}
	p, cfg, err := g.loadConfig()
	if err != nil {
		return nil, p, close, err
	}
	log := quietLogger(os.Stderr, cfg)
	rt, err := runtime.Build(ctx, runtime.Options{Paths: p, Config: cfg, Logger: log})
	if err != nil {
		return nil, p, close, err
	}
	close = func() { rt.Close(context.WithoutCancel(ctx)) }
	if out != nil {
		if _, err := rt.Attach(ctx, runtime.CLIConversation, channels.NewCLI(out)); err != nil {
			close()
			return nil, p, func() {}, err
		}
	}
	return rt.Sentinel(), p, close, nil
}

func newSentinelTickCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tick",
		Short: "Run one Sentinel tick now and show decision, route, policy verdict and delivery",
		Long: "Runs one tick against the shared state (policy ledger, inject queue, defer heap).\n" +
			"This terminal is attached as cli:direct: a nudge goes where the runtime's resolver says (a\n" +
			"channel this process has, else this terminal). Runs even when sentinel.enabled is false.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			// With --json stdout is the record alone: the nudge this
			// terminal receives goes to stderr.
			surface := out
			if asJSON {
				surface = cmd.ErrOrStderr()
			}
			sys, _, done, err := sentinelEnv(cmd.Context(), g, surface)
			if err != nil {
				return err
			}
			defer done()
			o := sys.Runner.TickOnce(cmd.Context())
			if asJSON {
				return printJSON(out, o.Record())
			}
			printTick(out, o.Record())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tick record as JSON")
	return cmd
}

func printTick(w io.Writer, r sentinel.TickRecord) {
	fmt.Fprintf(w, "%s  %s", r.Time.Local().Format("2006-01-02 15:04:05"), r.Action)
	if r.Priority != "" && r.Action != sentinel.ActionSkip {
		fmt.Fprintf(w, " (%s, score %.2f)", r.Priority, r.Score)
	}
	fmt.Fprintf(w, "  route=%s\n", r.Route)
	if r.Reason != "" {
		fmt.Fprintf(w, "  reason:   %s\n", r.Reason)
	}
	if r.Message != "" {
		fmt.Fprintf(w, "  message:  %s\n", r.Message)
	}
	switch {
	case r.Allowed == nil:
		fmt.Fprintf(w, "  policy:   not consulted\n")
	case *r.Allowed:
		fmt.Fprintf(w, "  policy:   allowed\n")
	default:
		fmt.Fprintf(w, "  policy:   denied by %s: %s\n", r.Layer, r.VerdictReason)
	}
	state := "no"
	switch {
	case r.Delivered:
		state = "yes"
	case r.Queued:
		state = "queued"
	}
	fmt.Fprintf(w, "  delivered: %s", state)
	if r.NudgeID != "" {
		fmt.Fprintf(w, " (nudge %s)", r.NudgeID)
	}
	if r.Error != "" {
		fmt.Fprintf(w, " — %s", r.Error)
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note:     %s\n", n)
	}
}

type sentinelStatus struct {
	Enabled       bool                  `json:"enabled"`
	Policy        any                   `json:"policy"`
	LastTick      *sentinel.TickRecord  `json:"last_tick,omitempty"`
	PendingInject int                   `json:"pending_injects"`
	Deferred      []executor.DeferEntry `json:"deferred"`
	Routines      []sentinel.Routine    `json:"routines"`
	Behaviors     behaviorsStatus       `json:"behaviors"`
}

type behaviorsStatus struct {
	Enabled bool `json:"enabled"`
	predictor.BehaviorsState
}

func newSentinelStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show quotas left, quiet hours, the adaptive multiplier and the last decision",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			_, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			sys, p, done, err := sentinelEnv(cmd.Context(), g, nil)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			snap := sys.Policy.SnapshotState()
			st := sentinelStatus{Enabled: cfg.Sentinel.Enabled, Policy: snap}
			if recs, err := sentinel.ReadTicks(p.TickLog(), 1); err == nil && len(recs) == 1 {
				st.LastTick = &recs[0]
			}
			if q, err := sys.Injector.Pending(ctx); err == nil {
				for _, es := range q {
					st.PendingInject += len(es)
				}
			}
			st.Deferred, _ = sys.Defer.Pending(ctx)
			st.Routines = sys.Assembler.Assemble(ctx).Routines
			st.Behaviors.Enabled = cfg.Sentinel.Behaviors.Enabled
			st.Behaviors.BehaviorsState, _ = predictor.ReadBehaviorsState(ctx, sys.Store)
			if asJSON {
				return printJSON(out, st)
			}
			fmt.Fprintf(out, "sentinel:     %s\n", map[bool]string{true: "enabled", false: "disabled (sentinel.enabled=false)"}[st.Enabled])
			quiet := "no"
			if snap.InQuietHours {
				quiet = "YES"
			}
			fmt.Fprintf(out, "quiet hours:  %s (now in quiet hours: %s)\n", snap.QuietHours, quiet)
			fmt.Fprintf(out, "nudges left:  %d today (of %d), %d this hour (of %d)\n", snap.DayLeft, snap.DayQuota, snap.HourLeft, snap.HourQuota)
			fmt.Fprintf(out, "spawns left:  %d today, %d this hour\n", snap.SpawnDayLeft, snap.SpawnHourLeft)
			fmt.Fprintf(out, "multiplier:   %.2f (weekend factor %.2f)\n", snap.Multiplier, snap.WeekendFactor)
			if !snap.DismissalCooldownUntil.IsZero() {
				fmt.Fprintf(out, "cooldown:     after a dismissal, until %s\n", snap.DismissalCooldownUntil.Format("15:04"))
			}
			if snap.StateError != "" {
				fmt.Fprintf(out, "state error:  %s\n", snap.StateError)
			}
			fmt.Fprintf(out, "queued:       %d inject(s), %d deferred\n", st.PendingInject, len(st.Deferred))
			fmt.Fprintf(out, "routines:     %d learned\n", len(st.Routines))
			for _, r := range st.Routines {
				fmt.Fprintf(out, "  %s: %s (confidence %.2f, %d samples)\n", r.When, r.Description, r.Confidence, r.Samples)
			}
			if b := st.Behaviors; !b.Enabled {
				fmt.Fprintln(out, "behaviors:    extractor off (sentinel.behaviors.enabled=false)")
			} else if b.LastRun.IsZero() {
				fmt.Fprintln(out, "behaviors:    extractor on, not run yet")
			} else {
				fmt.Fprintf(out, "behaviors:    last run %s, %d event(s), read up to %s", b.LastRun.Local().Format(time.DateTime), b.LastEvents, b.HighWater.Local().Format(time.DateTime))
				if b.LastError != "" {
					fmt.Fprintf(out, " — %s", b.LastError)
				}
				fmt.Fprintln(out)
			}
			if st.LastTick != nil {
				fmt.Fprintln(out, "last tick:")
				printTick(out, *st.LastTick)
			} else {
				fmt.Fprintln(out, "last tick:    none yet")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newSentinelExplainCmd(g *globals) *cobra.Command {
	var last int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Show recent ticks with their decisions and policy verdicts",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if last < 1 {
				return usageErr(fmt.Errorf("--last must be at least 1"))
			}
			p, err := g.paths()
			if err != nil {
				return err
			}
			recs, err := sentinel.ReadTicks(p.TickLog(), last)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintf(out, "no ticks recorded yet (%s)\n", p.TickLog())
				return nil
			}
			for _, r := range recs {
				printTick(out, r)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&last, "last", 10, "how many recent ticks")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
