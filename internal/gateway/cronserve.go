package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/spine"
)

// CronServeOptions configure a standalone cron service: `raven cron serve`,
// and `raven cron run` when no service runs on the data dir.
type CronServeOptions struct {
	Paths  config.Paths
	Config config.Config
	Logger *slog.Logger
	Clock  clock.Clock
	// Out receives deliveries to the cli channel verbatim, one line each:
	// "[cron <job id>] <message>".
	Out io.Writer
	// Channels restricts the service to jobs delivering to these channels
	// ("broadcast" names broadcast jobs); empty: every job.
	Channels []string
	// WrapHandler, when set, replaces or decorates the fire handler; a seam
	// for process tests, never set in production.
	WrapHandler func(cron.Handler) cron.Handler
}

// CronServer is a cron service over a model-less App: it shares the
// gateway's coupling — owner activity from the session store resets a job's
// decay, and every fire is written to the Sentinel's policy ledger and
// feedback log — but runs no model, so a delivering job's message goes out
// verbatim.
type CronServer struct {
	App     *App
	Service *cron.Service
}

// OpenCronServer assembles the App and the cron service. Close releases them.
func OpenCronServer(ctx context.Context, o CronServeOptions) (*CronServer, error) {
	cfg := o.Config
	// A standalone service delivers job messages verbatim even when a model
	// is configured: running turns is the gateway's (or chat's) job.
	cfg.Model = ""
	app, err := New(ctx, Options{Paths: o.Paths, Config: cfg, Logger: o.Logger, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	s := &CronServer{App: app}
	if err := s.init(ctx, o); err != nil {
		app.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func (s *CronServer) init(ctx context.Context, o CronServeOptions) error {
	a := s.App
	if o.Out != nil {
		out := o.Out
		a.Hub.Register("cli", spine.OutletFunc(func(_ context.Context, m spine.Message) error {
			id, _ := m.Extras["cron_job_id"].(string)
			_, err := fmt.Fprintf(out, "[cron %s] %s\n", id, m.Content)
			return err
		}))
	}
	// The Sentinel is attached, not started: the gateway owns its loop; a
	// fire here only needs its policy ledger and feedback log.
	if _, err := a.AttachSentinel(ctx); err != nil {
		return err
	}
	svc, _, err := a.buildCron(o.Channels, o.WrapHandler)
	if err != nil {
		return err
	}
	s.Service = svc
	return nil
}

// Run runs the service until ctx ends.
func (s *CronServer) Run(ctx context.Context) error { return s.Service.Run(ctx) }

// Fire fires job id once now, in this process (see cron.Service.FireRequested).
func (s *CronServer) Fire(ctx context.Context, id string) (cron.Run, error) {
	return s.Service.FireRequested(ctx, id)
}

// Close releases the App.
func (s *CronServer) Close(ctx context.Context) error { return s.App.Close(ctx) }

// ServeCron runs a standalone cron service until ctx ends.
func ServeCron(ctx context.Context, o CronServeOptions) error {
	s, err := OpenCronServer(ctx, o)
	if err != nil {
		return err
	}
	err = s.Run(ctx)
	if cerr := s.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// CronServiceLock is the lock a running cron service holds on the data dir;
// cron.ServiceRunning probes it.
func CronServiceLock(p config.Paths) string { return filepath.Join(p.CronDir(), "service.lock") }
