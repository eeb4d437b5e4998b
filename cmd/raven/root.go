package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
)

// globals are the flags every subcommand shares.
type globals struct {
	dataDir string
	model   string
	json    bool
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "raven",
		Short:         "Raven — a personal AI agent that is proactive without being noisy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", config.DefaultDataDir(), "data directory (env RAVEN_HOME)")
	root.PersistentFlags().StringVar(&g.model, "model", os.Getenv("RAVEN_MODEL"), "model for this run, provider/model or scripted:PATH (env RAVEN_MODEL)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(err) })
	// Each command group lives in its own file; add yours here.
	root.AddCommand(
		newVersionCmd(), newOnboardCmd(g), newConfigCmd(g), newChatCmd(g), newDoctorCmd(g), newGatewayCmd(g), newTUICmd(g),
		newConversationsCmd(g), newCronCmd(g), newHeartbeatCmd(g), newSentinelCmd(g), newNudgesCmd(g), newAuthCmd(g), newDemoCmd(g), newSimulateCmd(g),
		newInboxCmd(g), newAttentionCmd(g),
	)
	root.AddCommand(newApprovalsCmd(g))
	root.AddCommand(newSkillsCmd(g))
	root.AddCommand(newUsageCmd(g))
	root.AddCommand(newMemoryCmd(g))
	root.AddCommand(newSandboxExecCmd())
	root.AddCommand(newMCPCmd(g))
	return root
}

// paths returns the data directory layout.
func (g *globals) paths() (config.Paths, error) {
	p, err := config.NewPaths(g.dataDir)
	if err != nil {
		return p, usageErr(err)
	}
	return p, nil
}

// loadConfig loads config.json, applying the --model override. A bad file is
// a usage error (exit 2) naming the file and key.
func (g *globals) loadConfig() (config.Paths, config.Config, error) {
	p, err := g.paths()
	if err != nil {
		return p, config.Config{}, err
	}
	cfg, err := config.Load(p.Config())
	if err != nil {
		return p, cfg, usageErr(err)
	}
	if err := g.overlay(&cfg); err != nil {
		return p, cfg, usageErr(err)
	}
	return p, cfg, nil
}

// overlay applies the command line's overrides (--model) to a loaded config.
func (g *globals) overlay(cfg *config.Config) error {
	if g.model == "" {
		return nil
	}
	cfg.Model = g.model
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}

// quietLogger is the logger of one-shot commands: routine info lines would
// only clutter their output, so the level is at least warn unless the owner
// asked for debug.
func quietLogger(w io.Writer, cfg config.Config) *slog.Logger {
	if cfg.Log.Level == "info" {
		cfg.Log.Level = "warn"
	}
	return newLogger(w, cfg)
}

// newLogger builds the process logger from config (daemons: gateway, cron serve).
func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(cfg.Log.Level)))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr(fmt.Errorf("%s: want %d argument(s), got %d (see --help)", cmd.CommandPath(), n, len(args)))
		}
		return nil
	}
}
