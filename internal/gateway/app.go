// Package gateway assembles Raven's runtime — database, sessions, model,
// tools, agent loop, spine and the proactive services — for `raven gateway`,
// `raven chat` and the demo, and runs the long-lived gateway daemon.
package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
	"github.com/raven-agent/raven/internal/wake"
)

// Options are an App's inputs.
type Options struct {
	Paths  config.Paths
	Config config.Config
	Logger *slog.Logger
	Clock  clock.Clock
	// Provider overrides the configured model (the demo and tests pass a
	// scripted one). Nil: built from Config.Model; none configured is allowed.
	Provider llm.Provider
	// Pools overrides the per-origin concurrency (default: spine.DefaultPools
	// with the configured user pool).
	Pools map[spine.Origin]int
}

// App is a running Raven runtime.
type App struct {
	Paths     config.Paths
	Config    config.Config
	Log       *slog.Logger
	Clock     clock.Clock
	DB        *sql.DB
	Sessions  *session.Store
	Provider  llm.Provider // nil when no model is configured
	Tools     *tools.Registry
	Workspace *tools.Workspace
	Hub       *spine.Hub
	Scheduler *spine.Scheduler
	Agent     *agent.Agent
	Subagents *agent.SubagentManager
	// Broker is the ask_user broker, once EnableAskUser ran.
	Broker *questions.Broker
	// Wake is the heartbeat's wake scheduler, once StartHeartbeat ran.
	Wake *wake.Scheduler
	// Cron is the cron service, once StartCron ran.
	Cron *cron.Service
	// Sentinel is the proactive subsystem, once StartSentinel ran (built
	// even when disabled, so cron fires still reach the shared ledger).
	Sentinel *sentinel.System

	// emit records a notable event (the gateway's event log); a no-op
	// until SetEventSink.
	emit func(kind, conversation string, payload any)

	ctx    context.Context
	cancel context.CancelFunc
	// svc scopes the proactive services (cron, heartbeat, Sentinel,
	// triggers, channels): Close stops them first, so nothing new is
	// claimed or fired while running turns drain.
	svc     context.Context
	stopSvc context.CancelFunc
	bg      sync.WaitGroup
	waiters sync.WaitGroup
	onStart []func(spine.TurnRequest)
	onDone  []func(spine.TurnRequest, spine.Result)
	closers []func(context.Context) error
}

// New assembles the runtime. Close releases it.
func New(ctx context.Context, o Options) (*App, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	a := &App{Paths: o.Paths, Config: o.Config, Log: o.Logger, Clock: o.Clock, emit: func(string, string, any) {}}
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.svc, a.stopSvc = context.WithCancel(a.ctx)
	ok := false
	defer func() {
		if !ok {
			a.Close(context.Background())
		}
	}()

	db, err := sqlitedb.Open(o.Paths.DB())
	if err != nil {
		return nil, err
	}
	a.DB = db
	a.closers = append(a.closers, func(context.Context) error { return db.Close() })
	if a.Sessions, err = session.Open(ctx, db); err != nil {
		return nil, err
	}

	a.Provider = o.Provider
	if a.Provider == nil {
		a.Provider, err = NewProvider(o.Config, o.Clock, o.Logger)
		if errors.Is(err, llm.ErrNoModel) {
			o.Logger.Info("no model configured: chat replies explain how to set one; cron deliveries that need no model still go out")
		} else if err != nil {
			return nil, err
		}
	}

	if a.Workspace, err = tools.NewWorkspace(o.Paths.Workspace()); err != nil {
		return nil, err
	}
	a.Hub = spine.NewHub(o.Logger)
	pools := o.Pools
	if pools == nil {
		pools = spine.DefaultPools()
		pools[spine.OriginUser] = o.Config.Gateway.UserPool
	}
	a.Tools = tools.NewRegistry()
	ac := o.Config.Agent
	a.Agent = agent.New(agent.Options{
		Provider: a.Provider, Tools: a.Tools, Sessions: a.Sessions,
		MemoryPath: o.Paths.Memory(), HistoryPath: o.Paths.History(),
		Clock: o.Clock, Logger: o.Logger.With("component", "agent"),
		Config: agent.Config{SystemPrompt: ac.SystemPrompt, MaxIterations: ac.MaxIterations,
			HistoryTailBytes: ac.HistoryTailBytes, RecentMessages: ac.RecentMessages, MaxTokens: ac.MaxTokens,
			ToolTimeout: ac.ToolTimeout.D()},
	})
	a.Scheduler = spine.NewScheduler(a.Agent.RunTurn, a.Hub, spine.Options{
		Pools: pools, Logger: o.Logger.With("component", "spine"),
		OnTurnStart: func(req spine.TurnRequest) {
			for _, f := range a.onStart {
				f(req)
			}
		},
		OnTurnDone: func(req spine.TurnRequest, res spine.Result) {
			for _, f := range a.onDone {
				f(req, res)
			}
		},
	})
	a.Subagents = agent.NewSubagentManager(a.ctx, a.Scheduler.Submit, a.Hub.Post, o.Logger.With("component", "subagent"))
	if err := a.registerBuiltinTools(); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

func (a *App) registerBuiltinTools() error {
	ws := a.Workspace
	a.Tools.Register(tools.ReadFile{WS: ws})
	a.Tools.Register(tools.WriteFile{WS: ws})
	a.Tools.Register(tools.EditFile{WS: ws})
	a.Tools.Register(tools.ListDir{WS: ws})
	if ec := a.Config.Tools.Exec; ec.Enabled {
		ex, err := tools.NewExec(ws, ec.Timeout.D(), ec.MaxOutput, ec.Deny)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		a.Tools.Register(ex)
	}
	a.Tools.Register(tools.Message{Post: a.Hub.Post})
	a.Tools.Register(tools.Spawn{Spawn: a.Subagents.Spawn})
	return nil
}

// SetEventSink routes the runtime's notable events (sentinel ticks, policy
// denials, cron fires) to sink. Call before starting the services.
func (a *App) SetEventSink(sink func(kind, conversation string, payload any)) { a.emit = sink }

// OnTurnStart registers an observer of starting turns. Register before the
// first Submit.
func (a *App) OnTurnStart(f func(spine.TurnRequest)) { a.onStart = append(a.onStart, f) }

// Go runs a background service. Close stops services before it drains the
// running turns, and waits for them.
func (a *App) Go(name string, run func(ctx context.Context) error) {
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		if err := run(a.svc); err != nil && a.svc.Err() == nil {
			a.Log.Error("background service stopped", "service", name, "err", err)
		}
	}()
}

// GoUntilClose runs work that must outlive the services until the running
// turns have drained (a continuation waiting for its turn's result).
func (a *App) GoUntilClose(name string, run func(ctx context.Context) error) {
	a.waiters.Add(1)
	go func() {
		defer a.waiters.Done()
		if err := run(a.ctx); err != nil && a.ctx.Err() == nil {
			a.Log.Error("background work failed", "work", name, "err", err)
		}
	}()
}

// OnTurnDone registers an observer of finished turns. Register before the
// first Submit.
func (a *App) OnTurnDone(f func(spine.TurnRequest, spine.Result)) { a.onDone = append(a.onDone, f) }

// AddCloser registers a release step run by Close, last added first.
func (a *App) AddCloser(f func(context.Context) error) { a.closers = append(a.closers, f) }

// Context is the App's lifetime context, ended by Close.
func (a *App) Context() context.Context { return a.ctx }

// Close stops the proactive services, lets running turns finish until ctx
// ends, cancels the rest, and closes the database.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	a.stopSvc()
	a.bg.Wait()
	if a.Scheduler != nil {
		if err := a.Scheduler.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	a.cancel()
	a.waiters.Wait()
	if a.Subagents != nil {
		a.Subagents.Wait()
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	a.closers = nil
	return errors.Join(errs...)
}
