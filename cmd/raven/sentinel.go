package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// terminalChannel is the terminal's channel: the one outlet `raven sentinel`
// has.
const terminalChannel = "cli"

func newSentinelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sentinel",
		Short: "Inspect and drive the proactive Sentinel (works with or without a gateway)",
	}
	cmd.AddCommand(newSentinelTickCmd(g), newSentinelStatusCmd(g), newSentinelExplainCmd(g), newSentinelPrefsCmd(g), newSentinelDiscoverCmd(g))
	return cmd
}

// sentinelEnv builds a Sentinel over the data dir's shared files. The only
// outlet here is the terminal (out): a nudge for a cli session is printed
// with the proactive marker; one for any other channel is not delivered
// (the gateway owns those outlets), so the shared ledger and feedback log
// never record a delivery that did not happen.
// withModel builds the planner's model (sentinel.planner_model or the global
// one) and reads the session store; close releases what was opened.
func sentinelEnv(g *globals, out io.Writer, withModel bool) (sys *sentinel.System, p config.Paths, close func(), err error) {
	close = func() {}
	p, cfg, err := g.loadConfig()
	if err != nil {
		return nil, p, close, err
	}
	log := quietLogger(os.Stderr, cfg)
	var provider llm.Provider
	var sessions sentinel.SessionLister
	var lastActivity func(context.Context, string) (time.Time, bool)
	var messages func(context.Context, time.Time, int) ([]session.Entry, error)
	if withModel {
		mc := cfg
		if cfg.Sentinel.PlannerModel != "" {
			mc.Model = cfg.Sentinel.PlannerModel
		}
		provider, err = gateway.NewProvider(mc, clock.Real(), log)
		if errors.Is(err, llm.ErrNoModel) {
			provider, err = nil, nil // the planner skips; NewSystem logs it once
		}
		if err != nil {
			return nil, p, close, usageErr(err)
		}
		// The session store gives the planner the owner's active sessions;
		// without it the tick still runs on the files alone.
		if db, derr := sqlitedb.Open(p.DB()); derr != nil {
			log.Warn("sentinel: session store unavailable; ticking without sessions", "err", derr)
		} else if st, serr := session.Open(context.Background(), db); serr != nil {
			db.Close()
			log.Warn("sentinel: session store unavailable; ticking without sessions", "err", serr)
		} else {
			sessions, lastActivity, messages, close = st.Active, st.LastActivity, st.Since, func() { db.Close() }
		}
	}
	terminal := channels.NewCLI(out)
	post := func(ctx context.Context, m spine.Message) error {
		if m.Channel == terminalChannel {
			return terminal.Deliver(ctx, m)
		}
		fmt.Fprintf(out, "not delivered: no %s outlet in this process (the gateway delivers it)\n", m.Channel)
		return spine.ErrNoOutlet
	}
	sys, err = sentinel.NewSystem(sentinel.SystemOptions{
		Paths: p, Config: cfg.Sentinel, Provider: provider, Post: post,
		Sessions: sessions, LastActivity: lastActivity, Messages: messages,
		Targets: func(session string) []executor.Target {
			if ch, id, ok := spine.SplitConversationKey(session); ok {
				return []executor.Target{{Channel: ch, ChatID: id}}
			}
			return []executor.Target{{Channel: terminalChannel, ChatID: "local"}}
		},
		Clock: clock.Real(), Logger: log,
	})
	if err != nil {
		close()
		return nil, p, func() {}, err
	}
	return sys, p, close, nil
}

func newSentinelTickCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tick",
		Short: "Run one Sentinel tick now and show decision, route, policy verdict and delivery",
		Long: "Runs one tick against the shared state (policy ledger, inject queue, defer heap).\n" +
			"A nudge for a cli session is printed here; one for another channel is reported as not\n" +
			"delivered (the gateway delivers those). Runs even when sentinel.enabled is false.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			sys, _, done, err := sentinelEnv(g, out, true)
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
			sys, p, done, err := sentinelEnv(g, io.Discard, false)
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
