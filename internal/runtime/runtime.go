// Package runtime assembles Raven's whole runtime from the config in one
// fixed order; every entry point (gateway, chat, sentinel, cron, heartbeat) builds it with Build.
package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/memindex"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/skills"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/tools"
	"github.com/raven-agent/raven/internal/usage"
	"github.com/raven-agent/raven/internal/wake"
)

// Services choose which long-running loops Build starts. They never change
// how the runtime is wired: a disabled service's parts exist all the same.
type Services uint

const (
	// ServiceSentinel runs the tick and defer loops (when sentinel.enabled).
	ServiceSentinel Services = 1 << iota
	// ServiceCron runs the cron service (when cron.enabled), restricted to
	// Options.CronChannels.
	ServiceCron
	// ServiceHeartbeat runs the heartbeat loop (when heartbeat.enabled).
	ServiceHeartbeat
	// ServiceTriggers drains sentinel/triggers.json (one consumer per data dir).
	ServiceTriggers
	// ServiceRecovery recovers owner questions left pending by a previous
	// process and prunes the event log: the data dir's owner (the gateway)
	// does it, never a chat running beside it.
	ServiceRecovery

	// ServicesNone starts no loop: one-shot commands.
	ServicesNone Services = 0
	// ServicesGateway is every service: `raven gateway`.
	ServicesGateway = ServiceSentinel | ServiceCron | ServiceHeartbeat | ServiceTriggers | ServiceRecovery
)

// Has reports whether s includes every service of want.
func (s Services) Has(want Services) bool { return s&want == want }

// Options are Build's inputs.
type Options struct {
	Paths  config.Paths
	Config config.Config
	Logger *slog.Logger // default discards
	Clock  clock.Clock  // default clock.Real()
	// Provider overrides the configured model (the demo and tests pass a
	// scripted one). Nil: built from Config.Model; none configured is allowed.
	Provider llm.Provider
	// NoModel runs no model even when one is configured: `raven cron
	// serve|run` deliver job messages verbatim.
	NoModel bool
	// PlannerProvider overrides the Sentinel planner's model (tests). Nil:
	// sentinel.planner_model when set, else the runtime's model.
	PlannerProvider llm.Provider
	// Pools overrides the per-origin concurrency (default: spine.DefaultPools
	// with the configured user pool).
	Pools map[spine.Origin]int
	// Services are the loops to run.
	Services Services
	// CronChannels restricts ServiceCron to jobs delivering to these
	// channels ("broadcast" names broadcast jobs); empty: every job.
	CronChannels []string
	// WrapCronHandler decorates the cron fire handler; a seam for process
	// tests, never set in production.
	WrapCronHandler func(cron.Handler) cron.Handler
	// ShutdownReason is what a turn waiting on ask_user reads when Close
	// ends its wait (default DefaultShutdownReason).
	ShutdownReason string
	// StartChannels, when set, registers the daemon's channel outlets and
	// starts their listeners once everything is wired and before any
	// service loop runs, so the first tick or fire already resolves to
	// them (the gateway's Telegram and webhook).
	StartChannels func(*Runtime) error
	// OnTurnDone observes every finished turn after the runtime's own
	// observers (tests wait on it).
	OnTurnDone func(spine.TurnRequest, spine.Result)
	// Outbox overrides the durable store of undelivered proactive messages
	// (tests). Nil: the one in raven.db.
	Outbox Outbox
	// SandboxMode overrides the detected exec sandbox (tests simulating a
	// kernel without Landlock). Nil: sandbox.Detect.
	SandboxMode *sandbox.Mode
	// LogLevel, when set, is the level of Logger's handler: Reconfigure
	// applies log.level through it. Nil: log.level needs a restart.
	LogLevel *slog.LevelVar
}

// ErrMissingDependency is returned by Build when an input it cannot do
// without is absent.
var ErrMissingDependency = errors.New("runtime: missing dependency")

// Runtime is Raven assembled. Every part is built by Build and never
// replaced; Close releases it.
type Runtime struct {
	paths config.Paths
	// cfg is the config Build wired the runtime from; effective is cfg
	// with the live keys of the last Reconfigure (what Config returns).
	cfg       config.Config
	effective atomic.Pointer[config.Config]
	reconfMu  sync.Mutex
	logLevel  *slog.LevelVar
	log       *slog.Logger
	clk       clock.Clock
	services  Services
	// shutdownReason is what Close tells a turn waiting on ask_user.
	shutdownReason string

	db        *sql.DB
	usage     *usage.Store
	meter     *usage.Meter
	sessions  *session.Store
	provider  llm.Provider // nil when no model is configured
	planner   llm.Provider
	toolReg   *tools.Registry
	workspace *tools.Workspace
	hub       *spine.Hub
	scheduler *spine.Scheduler
	agent     *agent.Agent
	subagents *agent.SubagentManager
	memIndex  *memindex.Index
	memWriter *memindex.Writer
	broker    *questions.Broker
	auth      *auth.Store
	approvals *approvals.Store
	sandbox   *sandbox.Runner
	mcp       *mcp.Manager
	events    *eventlog.Log
	writer    *eventWriter
	questions *questions.Store
	sentinel  *sentinel.System
	cronStore *cron.Store
	cronSvc   *cron.Service
	wake      *wake.Scheduler
	heartbeat *heartbeat.Service
	triggers  *wake.TriggerStore
	inbound   *channels.Dispatcher
	outbox    Outbox
	surfaces  *surfaces
	skills    *skills.Store

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
	closed  sync.Once
	// attachSeq names each attachment for the outbox's claims.
	attachSeq atomic.Int64
}

// Build wires every part of Raven in one fixed order — database, sessions,
// models, hub, tools, agent, spine, subagents, skills, memory index and its
// tools, event log, auth, exec and its approvals, ask_user,
// owner questions, outbox, Sentinel, wake and heartbeat, cron, triggers,
// inbound dispatch — and starts the loops o.Services name. A part that
// cannot be built fails Build; nothing is skipped at run time.
func Build(ctx context.Context, o Options) (*Runtime, error) {
	if o.Paths.Root == "" {
		return nil, fmt.Errorf("%w: Options.Paths", ErrMissingDependency)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.ShutdownReason == "" {
		o.ShutdownReason = DefaultShutdownReason
	}
	r := &Runtime{paths: o.Paths, cfg: o.Config, log: o.Logger, clk: o.Clock, services: o.Services, shutdownReason: o.ShutdownReason,
		logLevel: o.LogLevel}
	r.effective.Store(&o.Config)
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.svc, r.stopSvc = context.WithCancel(r.ctx)
	ok := false
	defer func() {
		if !ok {
			r.Close(context.Background())
		}
	}()
	// Temp files of writes a crash interrupted are litter, never state:
	// clear them before anything reads the directories they sit in.
	statefile.SweepTempDirs(r.clk.Now(), r.log, o.Paths.StateDirs()...)
	steps := []struct {
		name string
		run  func(context.Context, Options) error
	}{
		{"database", r.buildStore},
		{"usage", r.buildUsage},
		{"model", r.buildModels},
		{"agent", r.buildAgent},
		{"web", r.buildWeb},
		{"skills", r.buildSkills},
		{"memory", r.buildMemory},
		{"event log", r.buildEvents},
		{"auth", r.buildAuth},
		{"approvals", r.buildApprovals},
		{"mcp", r.buildMCP},
		{"ask_user", r.buildAskUser},
		{"owner questions", r.buildQuestions},
		{"outbox", r.buildOutbox},
		{"sentinel", r.buildSentinel},
		{"heartbeat", r.buildHeartbeat},
		{"cron", r.buildCron},
		{"triggers", r.buildTriggers},
		{"inbound", r.buildInbound},
	}
	took := make([]any, 0, 2*len(steps))
	for _, s := range steps {
		start := time.Now()
		if err := s.run(ctx, o); err != nil {
			return nil, fmt.Errorf("runtime: %s: %w", s.name, err)
		}
		took = append(took, s.name, time.Since(start).Round(time.Microsecond).String())
	}
	r.log.Debug("runtime built", took...)
	r.observeTurns(nil, o.OnTurnDone)
	if o.StartChannels != nil {
		if err := o.StartChannels(r); err != nil {
			return nil, fmt.Errorf("runtime: channels: %w", err)
		}
	}
	if err := r.startServices(ctx); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

func (r *Runtime) buildStore(ctx context.Context, _ Options) error {
	db, err := sqlitedb.Open(r.paths.DB())
	if err != nil {
		return err
	}
	r.db = db
	r.AddCloser(func(context.Context) error { return db.Close() })
	r.sessions, err = session.Open(ctx, db)
	return err
}

func (r *Runtime) buildAgent(_ context.Context, o Options) error {
	var err error
	if r.workspace, err = tools.NewWorkspace(r.paths.Workspace()); err != nil {
		return err
	}
	r.hub = spine.NewHub(r.log)
	r.surfaces = newSurfaces()
	pools := o.Pools
	if pools == nil {
		pools = spine.DefaultPools()
		pools[spine.OriginUser] = r.cfg.Gateway.UserPool
	}
	r.toolReg = tools.NewRegistryWith(tools.RegistryOptions{SearchThreshold: r.cfg.Tools.SearchThreshold})
	ac := r.cfg.Agent
	r.agent = agent.New(agent.Options{
		Provider: r.provider, Tools: r.toolReg, Sessions: r.sessions,
		MemoryPath: r.paths.Memory(), HistoryPath: r.paths.History(),
		Clock: r.clk, Logger: r.log.With("component", "agent"),
		Config: agent.Config{SystemPrompt: ac.SystemPrompt, MaxIterations: ac.MaxIterations,
			HistoryTailBytes: ac.HistoryTailBytes, MemoryBytes: ac.MemoryBytes, RecentMessages: ac.RecentMessages, MaxTokens: ac.MaxTokens,
			ToolTimeout: ac.ToolTimeout.D(), Stream: ac.Stream},
		Stream: r.hub,
	})
	r.scheduler = spine.NewScheduler(r.runTurn, r.hub, spine.Options{
		Pools: pools, Logger: r.log.With("component", "spine"),
		OnTurnStart: func(req spine.TurnRequest) {
			for _, f := range r.onStart {
				f(req)
			}
		},
		OnTurnDone: func(req spine.TurnRequest, res spine.Result) {
			for _, f := range r.onDone {
				f(req, res)
			}
		},
	})
	r.subagents = agent.NewSubagentManager(r.ctx, r.scheduler.Submit, r.postOrResolve, r.log.With("component", "subagent"))
	// The owner's interactive surfaces: a message for cli or tui reaches
	// whoever is attached to its conversation, and nobody else.
	r.hub.Register(CLIChannel, surfaceOutlet{r.surfaces})
	r.hub.Register(channels.TUIChannel, surfaceOutlet{r.surfaces})
	return RegisterBuiltinTools(r.toolReg, r.workspace, r.cfg, r.hub, r.subagents)
}

// RegisterBuiltinTools registers the tools every agent has: files,
// message and spawn. Exec (when tools.exec.enabled) needs the approvals
// contract, so buildApprovals registers it once auth exists.
func RegisterBuiltinTools(reg *tools.Registry, ws *tools.Workspace, _ config.Config, hub *spine.Hub, subs *agent.SubagentManager) error {
	reg.Register(tools.NewReadFile(ws))
	reg.Register(tools.NewWriteFile(ws))
	reg.Register(tools.NewEditFile(ws))
	reg.Register(tools.NewListDir(ws))
	reg.Register(tools.NewMessage(hub.Post))
	reg.Register(tools.NewSpawn(subs.Spawn))
	return nil
}

func (r *Runtime) buildAuth(ctx context.Context, _ Options) error {
	var err error
	r.auth, err = auth.NewStore(ctx, r.db, r.clk)
	return err
}

// startServices starts the loops r.services name; Build's last step.
func (r *Runtime) startServices(ctx context.Context) error {
	if r.services.Has(ServiceRecovery) {
		if err := r.startRecovery(ctx); err != nil {
			return err
		}
	}
	if r.services.Has(ServiceSentinel) {
		r.startSentinel(ctx)
	} else {
		r.startFeedbackTrim()
	}
	if r.services.Has(ServiceHeartbeat) && r.cfg.Heartbeat.Enabled {
		r.Go("heartbeat", r.heartbeat.Run)
	}
	if r.services.Has(ServiceCron) && r.cfg.Cron.Enabled {
		r.Go("cron", r.cronSvc.Run)
	}
	if r.services.Has(ServiceTriggers) {
		r.startTriggers()
	}
	return nil
}

// Accessors. Each part exists from Build on; none is ever replaced.

func (r *Runtime) Paths() config.Paths               { return r.paths }
func (r *Runtime) Logger() *slog.Logger              { return r.log }
func (r *Runtime) Clock() clock.Clock                { return r.clk }
func (r *Runtime) Services() Services                { return r.services }
func (r *Runtime) DB() *sql.DB                       { return r.db }
func (r *Runtime) Sessions() *session.Store          { return r.sessions }
func (r *Runtime) Tools() *tools.Registry            { return r.toolReg }
func (r *Runtime) Workspace() *tools.Workspace       { return r.workspace }
func (r *Runtime) Hub() *spine.Hub                   { return r.hub }
func (r *Runtime) Scheduler() *spine.Scheduler       { return r.scheduler }
func (r *Runtime) Agent() *agent.Agent               { return r.agent }
func (r *Runtime) Subagents() *agent.SubagentManager { return r.subagents }
func (r *Runtime) Broker() *questions.Broker         { return r.broker }
func (r *Runtime) Auth() *auth.Store                 { return r.auth }
func (r *Runtime) Events() *eventlog.Log             { return r.events }
func (r *Runtime) Questions() *questions.Store       { return r.questions }
func (r *Runtime) Sentinel() *sentinel.System        { return r.sentinel }
func (r *Runtime) CronStore() *cron.Store            { return r.cronStore }
func (r *Runtime) Cron() *cron.Service               { return r.cronSvc }
func (r *Runtime) Wake() *wake.Scheduler             { return r.wake }
func (r *Runtime) Heartbeat() *heartbeat.Service     { return r.heartbeat }
func (r *Runtime) Inbound() *channels.Dispatcher     { return r.inbound }
func (r *Runtime) Outbox() Outbox                    { return r.outbox }

// Config is the config in effect: the one Build was given, with the live
// keys of the last Reconfigure.
func (r *Runtime) Config() config.Config { return *r.effective.Load() }

// Provider is the runtime's model; nil when none is configured.
func (r *Runtime) Provider() llm.Provider { return r.provider }

// ProviderName names the model for logs and status; "none" without one.
func (r *Runtime) ProviderName() string {
	if r.provider == nil {
		return "none"
	}
	return r.provider.Name()
}

// Context is the runtime's lifetime context, ended by Close.
func (r *Runtime) Context() context.Context { return r.ctx }

// ServiceContext ends when Close starts: the scope of long-running loops
// (channel listeners) that must stop before running turns drain.
func (r *Runtime) ServiceContext() context.Context { return r.svc }

// Go runs a background service. Close stops services before it drains the
// running turns, and waits for them.
func (r *Runtime) Go(name string, run func(ctx context.Context) error) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		if err := run(r.svc); err != nil && r.svc.Err() == nil {
			r.log.Error("background service stopped", "service", name, "err", err)
		}
	}()
}

// GoUntilClose runs work that must outlive the services until the running
// turns have drained (a continuation waiting for its turn's result).
func (r *Runtime) GoUntilClose(name string, run func(ctx context.Context) error) {
	r.waiters.Add(1)
	go func() {
		defer r.waiters.Done()
		if err := run(r.ctx); err != nil && r.ctx.Err() == nil {
			r.log.Error("background work failed", "work", name, "err", err)
		}
	}()
}

// AddCloser registers a release step run by Close, last added first.
func (r *Runtime) AddCloser(f func(context.Context) error) { r.closers = append(r.closers, f) }

// observeTurns registers turn observers; only Build calls it, before the
// first Submit.
func (r *Runtime) observeTurns(start func(spine.TurnRequest), done func(spine.TurnRequest, spine.Result)) {
	if start != nil {
		r.onStart = append(r.onStart, start)
	}
	if done != nil {
		r.onDone = append(r.onDone, done)
	}
}

// DefaultShutdownReason is what a turn waiting on ask_user reads when the
// runtime stops under it.
const DefaultShutdownReason = "Raven is shutting down"

// Close stops the proactive services, ends pending ask_user waits, lets
// running turns finish until ctx ends, cancels the rest, and closes the
// database. It is safe to call more than once.
func (r *Runtime) Close(ctx context.Context) error {
	var errs []error
	r.closed.Do(func() {
		// A turn blocked on the owner would otherwise hold the whole grace
		// period; cancelled, it tells the model and finishes promptly.
		if r.broker != nil {
			r.broker.CancelAll(r.shutdownReason)
		}
		r.stopSvc()
		r.bg.Wait()
		if r.scheduler != nil {
			if err := r.scheduler.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		r.cancel()
		r.waiters.Wait()
		if r.subagents != nil {
			r.subagents.Wait()
		}
		for i := len(r.closers) - 1; i >= 0; i-- {
			if err := r.closers[i](ctx); err != nil {
				errs = append(errs, err)
			}
		}
		r.closers = nil
	})
	return errors.Join(errs...)
}
