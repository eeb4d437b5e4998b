package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/wake"
)

func newHeartbeatCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "heartbeat",
		Short: "The HEARTBEAT.md task list: request a wake, show status, run one tick",
		Args:  exactArgs(0),
	}
	cmd.AddCommand(newHeartbeatTriggerCmd(g), newHeartbeatStatusCmd(g), newHeartbeatRunCmd(g))
	return cmd
}

func newHeartbeatTriggerCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "trigger",
		Short: "Ask the gateway for an early heartbeat (queued in sentinel/triggers.json until a gateway runs)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if !cfg.Heartbeat.Enabled {
				// A gateway would consume the request and run nothing.
				return errHeartbeatDisabled
			}
			st := wake.NewTriggerStore(p.Triggers(), clock.Real(), quietLogger(cmd.ErrOrStderr(), cfg))
			t, err := st.Add(cmd.Context(), wake.TriggerHeartbeat, reason)
			var ce *wake.CorruptError
			if errors.As(err, &ce) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", ce)
				t, err = st.Add(cmd.Context(), wake.TriggerHeartbeat, reason)
			}
			var te *wake.TriggerError
			if errors.As(err, &te) {
				return usageErr(te)
			}
			if err != nil {
				return err
			}
			running, pid, err := gateway.Running(p)
			if err != nil {
				return err
			}
			if running {
				fmt.Fprintf(cmd.OutOrStdout(), "wake requested (%s); the running gateway (pid %s) picks it up within seconds\n", t.ID, pid)
				return nil
			}
			// The trigger file outlives this command: the next gateway's
			// first drain finds it, so the request is kept, not lost.
			fmt.Fprintf(cmd.OutOrStdout(), "wake queued (%s) for the next gateway start: no gateway runs on %s (run raven heartbeat run to run one now)\n", t.ID, p.Root)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "manual trigger", "why the wake was requested (shown to the heartbeat)")
	return cmd
}

// errHeartbeatDisabled refuses a trigger no gateway would act on.
var errHeartbeatDisabled = errors.New("heartbeat trigger: the heartbeat is disabled (heartbeat.enabled=false), so no gateway would run it; enable it (raven config set heartbeat.enabled true, then restart the gateway) or run one now with raven heartbeat run")

// heartbeatStatus is what `raven heartbeat status` reports.
type heartbeatStatus struct {
	File            heartbeat.FileState `json:"file"`
	Enabled         bool                `json:"enabled"`
	Interval        string              `json:"interval"`
	LastRun         *heartbeat.Outcome  `json:"last_run,omitempty"`
	PendingTriggers int                 `json:"pending_triggers"`
}

func newHeartbeatStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether HEARTBEAT.md has tasks and what the last heartbeat did",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			s := heartbeatStatus{Enabled: cfg.Heartbeat.Enabled, Interval: cfg.Heartbeat.Interval.D().String()}
			if s.File, err = heartbeat.Inspect(p.Heartbeat(), cfg.Heartbeat.MaxFileBytes); err != nil {
				return err
			}
			last, ok, err := heartbeat.ReadLastRun(heartbeat.LastRunPath(p.Root))
			if err != nil {
				return err
			}
			if ok {
				s.LastRun = &last
			}
			pending, err := wake.NewTriggerStore(p.Triggers(), clock.Real(), nil).Pending(cmd.Context())
			if err != nil {
				return err
			}
			for _, t := range pending {
				if t.Kind == wake.TriggerHeartbeat {
					s.PendingTriggers++
				}
			}
			if asJSON || g.json {
				return printJSON(cmd.OutOrStdout(), s)
			}
			printHeartbeatStatus(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printHeartbeatStatus(w io.Writer, s heartbeatStatus) {
	state := "absent"
	switch {
	case s.File.Present && s.File.Active:
		state = "active (has tasks)"
	case s.File.Present:
		state = "template only (no tasks: no model calls)"
	}
	enabled := "enabled"
	if !s.Enabled {
		enabled = "disabled"
	}
	fmt.Fprintf(w, "heartbeat:  %s, every %s\n", enabled, s.Interval)
	fmt.Fprintf(w, "file:       %s — %s\n", s.File.Path, state)
	if s.File.Truncated {
		fmt.Fprintf(w, "            %d bytes; only the first part is read (heartbeat.max_file_bytes)\n", s.File.Bytes)
	}
	if s.LastRun == nil {
		fmt.Fprintln(w, "last run:   none recorded")
	} else {
		l := s.LastRun
		fmt.Fprintf(w, "last run:   %s  %s", l.At.Local().Format(time.RFC3339), l.Route)
		if l.Reason != "" {
			fmt.Fprintf(w, " — %s", l.Reason)
		}
		fmt.Fprintln(w)
		if l.Error != "" {
			fmt.Fprintf(w, "            error: %s\n", l.Error)
		}
		for _, t := range l.Delivered {
			fmt.Fprintf(w, "            delivered to %s:%s\n", t.Channel, t.ChatID)
		}
	}
	fmt.Fprintf(w, "pending wake triggers: %d\n", s.PendingTriggers)
}

func newHeartbeatRunCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one heartbeat tick now in the foreground; a due task's reply is printed here",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if cfg.Model == "" {
				return errors.New("heartbeat run: no model configured; set \"model\" in config.json, RAVEN_MODEL or --model (e.g. ollama/qwen2.5:7b)")
			}
			log := quietLogger(cmd.ErrOrStderr(), cfg)
			rt, err := runtime.Build(cmd.Context(), runtime.Options{Paths: p, Config: cfg, Logger: log})
			if err != nil {
				return err
			}
			defer rt.Close(context.WithoutCancel(cmd.Context()))
			out := cmd.OutOrStdout()
			// This terminal is the attached surface: a due task's result is
			// printed here (a channel this process has no outlet for is not
			// reached from a manual run).
			detach, err := rt.Attach(cmd.Context(), runtime.CLIConversation, runtime.SurfaceFunc(func(_ context.Context, m spine.Message) error {
				if asJSON || g.json {
					return nil
				}
				_, err := fmt.Fprintf(out, "\n%s\n", m.Content)
				return err
			}))
			if err != nil {
				return err
			}
			defer detach()
			o, err := rt.Heartbeat().TickOnce(cmd.Context())
			if asJSON || g.json {
				if perr := printJSON(out, o); perr != nil {
					return perr
				}
				return err
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "heartbeat: %s", o.Route)
			if o.Reason != "" {
				fmt.Fprintf(out, " — %s", o.Reason)
			}
			fmt.Fprintln(out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return cmd
}
