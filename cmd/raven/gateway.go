package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/runtime"
)

func newGatewayCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run Raven's long-lived service: channels, agent, Sentinel, cron, heartbeat, control API",
		Long: `Runs in the foreground until SIGINT/SIGTERM, then stops accepting work, lets running
turns finish within gateway.shutdown_grace, cancels the rest and exits 0.
One gateway per data dir; raven chat may run beside it.

config.json is watched (checked every 2s, and reloaded at once on SIGHUP). These keys
apply live: ` + strings.Join(runtime.LiveKeys(), ", ") + `.
Any other changed key is logged and listed by raven gateway status as "restart needed
for"; a file that does not load is refused (logged with its dotted key) and the config
in effect stays.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			// A LevelVar lets a reload change log.level in place.
			level := new(slog.LevelVar)
			log := newLoggerLevel(os.Stderr, cfg, level)
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			reload := make(chan struct{})
			go func() {
				for {
					select {
					case <-hup:
						select {
						case reload <- struct{}{}:
						case <-cmd.Context().Done():
							return
						}
					case <-cmd.Context().Done():
						return
					}
				}
			}()
			err = gateway.Run(cmd.Context(), gateway.DaemonOptions{
				Runtime: runtime.Options{Paths: p, Config: cfg, Logger: log, LogLevel: level},
				Version: version,
				Reload:  reload,
				// --model wins over the file on every reload too, so it
				// never reads as a change needing a restart.
				Overlay: g.overlay,
			})
			if errors.Is(err, gateway.ErrAlreadyRunning) {
				return &exitError{code: 1, err: err}
			}
			return err
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Report whether a gateway runs on this data dir, and its state",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			notRunning := func() error {
				if asJSON || g.json {
					if err := printJSON(cmd.OutOrStdout(), map[string]any{"running": false}); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "gateway: not running")
				}
				// 3 whatever the format: scripts test the exit code, and
				// --json must not turn "not running" into success.
				return &exitError{code: exitNotRunning, err: errGatewayNotRunning}
			}
			// No lock file: no gateway ever ran here; asking the lock would
			// create the data dir, which a status query must not.
			if _, err := os.Stat(p.GatewayLock()); errors.Is(err, fs.ErrNotExist) {
				return notRunning()
			}
			running, _, err := gateway.Running(p)
			if err != nil {
				return err
			}
			if !running {
				return notRunning()
			}
			tok, err := auth.ReadTokenFile(p.OperatorToken())
			if err != nil {
				return fmt.Errorf("gateway status: %w (run raven onboard)", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
			defer cancel()
			c, err := controlapi.Dial(ctx, p.Socket(), tok)
			if err != nil {
				return fmt.Errorf("gateway status: a gateway holds %s but its control socket does not answer: %w", p.Root, err)
			}
			defer c.Close()
			res, err := controlapi.Invoke(ctx, c, api.GatewayStatus, api.Empty{})
			if err != nil {
				return err
			}
			if res.Gateway == nil {
				return fmt.Errorf("gateway status: the server at %s is not a Raven gateway (no gateway part in its status)", p.Socket())
			}
			st := struct {
				api.StatusResult
				Running bool `json:"running"`
			}{res, true}
			if asJSON || g.json {
				return printJSON(cmd.OutOrStdout(), st)
			}
			w, gs := cmd.OutOrStdout(), *st.Gateway
			fmt.Fprintf(w, "gateway: running (pid %d, version %s, up %s)\n", st.PID, st.Version, (time.Duration(st.UptimeS) * time.Second).String())
			fmt.Fprintf(w, "  model:      %s (planner %s)\n", gs.Model, gs.PlannerModel)
			fmt.Fprintf(w, "  channels:   %v (forward %v)\n", gs.Channels, gs.Forward)
			fmt.Fprintf(w, "  sentinel:   %s every %s\n", onOff(gs.SentinelEnabled), gs.SentinelEvery)
			fmt.Fprintf(w, "  heartbeat:  %s every %s\n", onOff(gs.HeartbeatOn), gs.HeartbeatEvery)
			fmt.Fprintf(w, "  cron:       %s\n", onOff(gs.CronEnabled))
			fmt.Fprintf(w, "  attached:   %v\n", gs.Attached)
			fmt.Fprintf(w, "  outbox:     %d waiting\n", gs.OutboxPending)
			fmt.Fprintf(w, "  log level:  %s\n", gs.LogLevel)
			if len(gs.RestartNeeded) > 0 {
				fmt.Fprintf(w, "restart needed for: %s\n", strings.Join(gs.RestartNeeded, ", "))
			}
			if gs.ConfigError != "" {
				fmt.Fprintf(w, "config reload refused (the values above stay in effect): %s\n", gs.ConfigError)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(status)
	return cmd
}

// exitNotRunning is `raven gateway status`'s exit code when no gateway runs
// on the data dir (the LSB "not running" status code).
const exitNotRunning = 3

// errGatewayNotRunning is `raven gateway status`'s error when none runs.
var errGatewayNotRunning = errors.New("gateway is not running")

// newLoggerLevel is newLogger with its level held in level, so a config
// reload can change it.
func newLoggerLevel(w io.Writer, cfg config.Config, level *slog.LevelVar) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(cfg.Log.Level)))
	level.Set(lvl)
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
