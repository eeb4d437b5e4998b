package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

func newCronCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "Manage scheduled jobs (cron/jobs.json) and run the cron service",
	}
	cmd.AddCommand(newCronAddCmd(g), newCronListCmd(g), newCronRemoveCmd(g),
		newCronEnableCmd(g, true), newCronEnableCmd(g, false), newCronRunCmd(g),
		newCronRunsCmd(g), newCronServeCmd(g))
	return cmd
}

// cronEnv is what every cron subcommand needs.
type cronEnv struct {
	paths config.Paths
	cfg   config.Config
	store *cron.Store
	log   *slog.Logger
}

func (g *globals) cronEnv() (*cronEnv, error) {
	p, cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	log := newLogger(os.Stderr, cfg)
	return &cronEnv{
		paths: p, cfg: cfg, log: log,
		store: cron.NewStore(p.CronJobs(), clock.Real(), log, cfg.Cron.LockTimeout.D()),
	}, nil
}

// badInput reports whether err is the owner's mistake (exit 2).
func badInput(err error) bool {
	for _, e := range []error{cron.ErrInvalidSchedule, cron.ErrInvalidExpr, cron.ErrUnknownTimezone,
		cron.ErrAtInPast, cron.ErrEveryTooShort, cron.ErrUnknownChannel, cron.ErrInvalidJob, cron.ErrNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func cronErr(err error) error {
	if err != nil && badInput(err) {
		return usageErr(err)
	}
	return err
}

func newCronAddCmd(g *globals) *cobra.Command {
	var spec cron.Spec
	cmd := &cobra.Command{
		Use:   "add --name N --message M (--every 30m | --cron EXPR [--tz ZONE] | --at RFC3339)",
		Short: "Add a job and print its id",
		Long: "Add a job. Exactly one schedule: --every (duration, at least 1s), --cron (5 fields, " +
			"evaluated in --tz, default the machine's zone, stored by name) or --at (one-shot RFC 3339, in the future).\n" +
			"--deliver sends the result to --channel (default cli, which expands to the attached " +
			"surface and channels.forward) and --to (default: the channel's latest chat); " +
			"--broadcast sends to every owner channel; --silent runs without messaging.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			if spec.Cron != "" && spec.TZ == "" {
				// Schedules follow the owner's clock, written down by name.
				spec.TZ = cron.SystemZone()
			}
			j, err := cron.NewJob(spec, time.Now())
			if err != nil {
				return usageErr(err)
			}
			j, err = env.store.Add(cmd.Context(), j)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), j.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Name, "name", "", "job name (also the topic shared with proactive nudges)")
	f.StringVar(&spec.Message, "message", "", "what to do or say when the job fires")
	f.StringVar(&spec.Every, "every", "", "interval, e.g. 30m (at least 1s)")
	f.StringVar(&spec.Cron, "cron", "", `5-field cron expression, e.g. "0 9 * * 1-5"`)
	f.StringVar(&spec.TZ, "tz", "", "IANA timezone for --cron, e.g. Europe/Berlin (default: this machine's zone)")
	f.StringVar(&spec.At, "at", "", "one-shot time, RFC 3339, e.g. 2026-12-01T09:00:00+01:00")
	f.BoolVar(&spec.Deliver, "deliver", false, "send the result to the owner")
	f.StringVar(&spec.Channel, "channel", "", "delivery channel: cli, tui, webhook, telegram")
	f.StringVar(&spec.To, "to", "", "chat id on --channel")
	f.BoolVar(&spec.Broadcast, "broadcast", false, "deliver to every owner channel")
	f.BoolVar(&spec.Silent, "silent", false, "run without messaging the owner")
	return cmd
}

func newCronListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			// Snapshot, not Jobs: printing only reads, and a copy of 10,000
			// jobs costs more than printing them.
			snap, err := env.store.Snapshot(cmd.Context())
			if err != nil {
				return err
			}
			jobs := snap.Jobs
			if asJSON {
				if jobs == nil {
					jobs = []cron.Job{}
				}
				return printJSON(cmd.OutOrStdout(), jobs)
			}
			return printJobs(cmd.OutOrStdout(), jobs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printJobs(w io.Writer, jobs []cron.Job) error {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return nil
	}
	// The tabwriter writes every cell on its own: buffered, 10,000 jobs
	// are a few dozen write calls instead of 140,000.
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tDELIVERY\tNEXT\tSTATE\tLAST")
	// One row buffer for every job: fmt and per-cell strings were most of
	// the cost of printing 10,000 jobs.
	var row []byte
	for i := range jobs {
		j := &jobs[i]
		row = append(row[:0], j.ID...)
		row = append(row, '\t')
		row = append(row, j.Name...)
		row = append(row, '\t')
		row = append(row, j.Schedule.String()...)
		row = append(row, '\t')
		switch m := j.Mode(); m {
		case cron.ModeSingle:
			row = append(row, j.DeliveryChannel()...)
			if j.To != "" {
				row = append(row, ':')
				row = append(row, j.To...)
			}
		default:
			row = append(row, m...)
		}
		row = append(row, '\t')
		if j.NextRunAt.IsZero() {
			row = append(row, '-')
		} else {
			row = j.NextRunAt.Local().AppendFormat(row, time.RFC3339)
		}
		row = append(row, '\t')
		if j.Enabled {
			row = append(row, "enabled"...)
		} else {
			row = append(row, "disabled"...)
			if j.DisabledReason != "" {
				row = append(row, " ("...)
				row = append(row, j.DisabledReason...)
				row = append(row, ')')
			}
		}
		row = append(row, '\t')
		if j.LastRunAt.IsZero() {
			row = append(row, '-')
		} else {
			row = j.LastRunAt.Local().AppendFormat(row, time.RFC3339)
			row = append(row, ' ')
			row = append(row, j.LastStatus...)
		}
		row = append(row, '\n')
		if _, err := tw.Write(row); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

func newCronRemoveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a job",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			if err := env.store.Remove(cmd.Context(), args[0]); err != nil {
				return cronErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "removed", args[0])
			return nil
		},
	}
}

func newCronEnableCmd(g *globals, on bool) *cobra.Command {
	use, short := "enable ID", "Enable a job (its next run is computed from now)"
	if !on {
		use, short = "disable ID", "Disable a job"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			if err := env.store.SetEnabled(cmd.Context(), args[0], on); err != nil {
				return cronErr(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.Fields(use)[0]+"d", args[0])
			return nil
		},
	}
}

func newCronRunCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Fire a job now",
		Long: "Fire a job once now, whatever its schedule or enabled flag say. When a cron service " +
			"(raven cron serve, the gateway or raven chat) runs on this data dir, the job is marked due " +
			"and that service fires it within a second; otherwise it fires here, delivering its message " +
			"verbatim to stdout.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			id := args[0]
			if _, err := env.store.Get(cmd.Context(), id); err != nil {
				return cronErr(err)
			}
			running, err := cron.ServiceRunning(runtime.CronServiceLock(env.paths))
			if err != nil {
				return err
			}
			if running {
				if err := env.store.RequestRun(cmd.Context(), id); err != nil {
					return cronErr(err)
				}
				gw, pid, err := gateway.Running(env.paths)
				if err != nil {
					return err
				}
				if gw {
					fmt.Fprintf(cmd.OutOrStdout(), "requested %s; the running gateway (pid %s) fires it within a second (see: raven cron runs %s)\n", id, pid, id)
					return nil
				}
				// raven chat and cron serve --channels fire only the jobs of
				// their channels: say so rather than promise the fire.
				job, _ := env.store.Get(cmd.Context(), id)
				fmt.Fprintf(cmd.OutOrStdout(), "requested %s; the running cron service (raven chat or raven cron serve) fires it within a second if it serves the job's %s channel, else the next gateway start does (see: raven cron runs %s)\n",
					id, job.DeliveryChannel(), id)
				return nil
			}
			rt, err := env.standalone(cmd.Context(), cmd.OutOrStdout(), runtime.ServicesNone, nil)
			if err != nil {
				return err
			}
			defer rt.Close(context.WithoutCancel(cmd.Context()))
			run, ferr := rt.FireCron(cmd.Context(), id)
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), run); err != nil {
					return err
				}
			} else if ferr == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "fired %s: %s%s\n", id, run.Outcome, skippedWhy(run.Outcome, env.cfg.Model))
			}
			return ferr
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run record as JSON")
	return cmd
}

func newCronRunsCmd(g *globals) *cobra.Command {
	var (
		asJSON bool
		last   int
	)
	cmd := &cobra.Command{
		Use:   "runs [ID]",
		Short: "Show recent fires from cron/runs.jsonl",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr(fmt.Errorf("%s: at most one job id", cmd.CommandPath()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 1 {
				return usageErr(errors.New("--last must be at least 1"))
			}
			p, err := g.paths()
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			runs, err := cron.NewRunLog(p.CronRuns()).Tail(id, last)
			if err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []cron.Run{}
				}
				return printJSON(cmd.OutOrStdout(), runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no runs")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tSCHEDULED\tFIRED\tLATE\tPID\tOUTCOME\tERROR")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.JobID, r.ScheduledAt.Local().Format(time.RFC3339),
					r.FiredAt.Local().Format(time.RFC3339Nano), r.FiredAt.Sub(r.ScheduledAt).Round(time.Millisecond),
					r.PID, r.Outcome, r.Error)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&last, "last", 20, "how many runs to show")
	return cmd
}

func newCronServeCmd(g *globals) *cobra.Command {
	var channels []string
	cmd := &cobra.Command{
		Use:   "serve [--channels cli,webhook]",
		Short: "Run the cron service alone in the foreground until SIGINT/SIGTERM",
		Long: "Run the cron service in the foreground, for a data dir with no gateway. It refuses to start " +
			"while a gateway runs on the data dir: the gateway runs every job itself, with its model, and a " +
			"second service without one would claim jobs it cannot run. --channels restricts it to jobs " +
			"delivering to those channels (\"broadcast\" names broadcast jobs); default: every job. This command " +
			"runs no model: a delivering job's message is printed verbatim as \"[cron <id>] <message>\" on " +
			"stdout. Logs go to stderr.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, c := range channels {
				if !cron.KnownChannel(c) && c != "broadcast" {
					return usageErr(fmt.Errorf("--channels: %w %q (want cli, tui, webhook, telegram or broadcast)", cron.ErrUnknownChannel, c))
				}
			}
			env, err := g.cronEnv()
			if err != nil {
				return err
			}
			if !env.cfg.Cron.Enabled {
				return errors.New("cron is disabled (cron.enabled=false in config.json)")
			}
			if running, pid, err := gateway.Running(env.paths); err != nil {
				return err
			} else if running {
				return fmt.Errorf("%w: a gateway (pid %s) runs on %s and runs every job itself; stop it, or use raven cron run ID to fire one job through it",
					errGatewayRunsCron, pid, env.paths.Root)
			}
			if env.cfg.Model != "" {
				env.log.Info("cron serve runs no model; delivering job messages verbatim", "model", env.cfg.Model)
			}
			rt, err := env.standalone(cmd.Context(), cmd.OutOrStdout(), runtime.ServiceCron, channels)
			if err != nil {
				return err
			}
			env.log.Info("cron service started", "channels", channels, "pid", os.Getpid(), "jobs", env.paths.CronJobs())
			<-cmd.Context().Done()
			err = rt.Close(context.WithoutCancel(cmd.Context()))
			env.log.Info("cron service stopped")
			return err
		},
	}
	cmd.Flags().StringSliceVar(&channels, "channels", nil, "only fire jobs delivering to these channels")
	return cmd
}

// skippedWhy says why a fire here was skipped: `cron run` runs no model,
// whether or not one is configured, and only a silent job needs one.
func skippedWhy(outcome cron.Status, model string) string {
	if outcome != cron.StatusSkipped {
		return ""
	}
	if model == "" {
		return " (a silent job runs a model turn, and no model is configured)"
	}
	return fmt.Sprintf(" (a silent job runs a model turn; raven cron run runs none — start raven gateway, which runs it with %s)", model)
}

// errGatewayRunsCron refuses `raven cron serve` beside a gateway.
var errGatewayRunsCron = errors.New("cron serve: refused")

// standalone builds the model-less runtime of `raven cron serve|run`: a
// delivering job's message goes out verbatim, and this terminal is the
// attached surface, printing "[cron <id>] <message>" lines to out.
func (env *cronEnv) standalone(ctx context.Context, out io.Writer, svc runtime.Services, channels []string) (*runtime.Runtime, error) {
	rt, err := runtime.Build(ctx, runtime.Options{
		Paths: env.paths, Config: env.cfg, Logger: env.log, Clock: clock.Real(), NoModel: true,
		Services: svc, CronChannels: channels, WrapCronHandler: cronTestHook(),
	})
	if err != nil {
		return nil, err
	}
	if _, err := rt.Attach(ctx, runtime.CLIConversation, runtime.SurfaceFunc(func(_ context.Context, m spine.Message) error {
		id, _ := m.Extras["cron_job_id"].(string)
		_, err := fmt.Fprintf(out, "[cron %s] %s\n", id, m.Content)
		return err
	})); err != nil {
		rt.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return rt, nil
}
