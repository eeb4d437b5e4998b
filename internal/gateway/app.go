package gateway

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
)

// Options are an App's inputs.
//
// Deprecated: App is the demo's (internal/sim) hand-wired core until it is
// ported to runtime.Build; every command uses runtime.Build.
type Options struct {
	Paths    config.Paths
	Config   config.Config
	Logger   *slog.Logger
	Clock    clock.Clock
	Provider llm.Provider
}

// App is the agent core alone — database, sessions, model, tools, agent
// loop, spine, subagents — on which the demo wires its scripted proactive
// services by hand.
//
// Deprecated: use runtime.Build.
type App struct {
	Sessions  *session.Store
	Provider  llm.Provider
	Tools     *tools.Registry
	Workspace *tools.Workspace
	Hub       *spine.Hub
	Scheduler *spine.Scheduler
	Agent     *agent.Agent
	Subagents *agent.SubagentManager
	// Broker is the ask_user broker, once EnableAskUser ran.
	Broker *questions.Broker

	cfg    config.Config
	log    *slog.Logger
	clk    clock.Clock
	db     *sql.DB
	ctx    context.Context
	cancel context.CancelFunc
	onDone []func(spine.TurnRequest, spine.Result)
	once   sync.Once
}

// New assembles the core. Close releases it.
//
// Deprecated: use runtime.Build.
func New(ctx context.Context, o Options) (*App, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	a := &App{cfg: o.Config, log: o.Logger, clk: o.Clock, Provider: o.Provider}
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	ok := false
	defer func() {
		if !ok {
			a.Close(context.Background())
		}
	}()
	var err error
	if a.db, err = sqlitedb.Open(o.Paths.DB()); err != nil {
		return nil, err
	}
	if a.Sessions, err = session.Open(ctx, a.db); err != nil {
		return nil, err
	}
	if a.Provider == nil {
		if a.Provider, err = runtime.NewProvider(o.Config, o.Clock, o.Logger); err != nil && !errors.Is(err, llm.ErrNoModel) {
			return nil, err
		}
	}
	if a.Workspace, err = tools.NewWorkspace(o.Paths.Workspace()); err != nil {
		return nil, err
	}
	a.Hub = spine.NewHub(o.Logger)
	pools := spine.DefaultPools()
	pools[spine.OriginUser] = o.Config.Gateway.UserPool
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
		OnTurnDone: func(req spine.TurnRequest, res spine.Result) {
			for _, f := range a.onDone {
				f(req, res)
			}
		},
	})
	a.Subagents = agent.NewSubagentManager(a.ctx, a.Scheduler.Submit, a.Hub.Post, o.Logger.With("component", "subagent"))
	if err := runtime.RegisterBuiltinTools(a.Tools, a.Workspace, o.Config, a.Hub, a.Subagents); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// OnTurnDone registers an observer of finished turns, before the first Submit.
func (a *App) OnTurnDone(f func(spine.TurnRequest, spine.Result)) { a.onDone = append(a.onDone, f) }

// EnableAskUser creates the ask_user broker and registers the tool; notify
// sees each question.
func (a *App) EnableAskUser(notify func(conv string, req questions.ClarifyRequest)) *questions.Broker {
	a.Broker = questions.NewBroker(questions.BrokerOptions{
		Clock: a.clk, Logger: a.log.With("component", "ask_user"), Notify: notify,
		Post: func(ctx context.Context, channel, chatID, text string) error {
			return a.Hub.Post(ctx, spine.Message{Channel: channel, ChatID: chatID, Content: text, Origin: spine.OriginUser})
		},
	})
	a.Tools.Register(questions.NewAskUserTool(a.Broker, a.cfg.Tools.AskUser.Timeout.D()))
	return a.Broker
}

// NewDispatcher builds the inbound dispatch: a pending ask_user question
// gets the message first, then INJECT into a running turn or APPEND.
func (a *App) NewDispatcher() (*channels.Dispatcher, error) {
	d := channels.DispatcherDeps{HasInflight: a.Scheduler.HasInflight, Submit: a.Scheduler.Submit, Post: a.Hub.Post,
		Log: a.log.With("component", "inbound")}
	if b := a.Broker; b != nil {
		d.PendingQuestion = func(conv string) bool { return b.PendingFor(conv) || b.ExpiredUnanswered(conv) }
		d.AnswerQuestion = func(conv, text string) bool {
			err := b.ReplyText(conv, text)
			if errors.Is(err, questions.ErrExpired) {
				b.ForgetExpired(conv)
				ch, id, _ := spine.SplitConversationKey(conv)
				a.Hub.Post(a.ctx, spine.Message{Channel: ch, ChatID: id,
					Content: "That question expired before your answer arrived; treating your message as a new one."})
			}
			return err == nil
		}
	}
	return channels.NewDispatcher(d)
}

// Close drains running turns until ctx ends and closes the database.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	a.once.Do(func() {
		if a.Scheduler != nil {
			errs = append(errs, a.Scheduler.Shutdown(ctx))
		}
		a.cancel()
		if a.Subagents != nil {
			a.Subagents.Wait()
		}
		if a.db != nil {
			errs = append(errs, a.db.Close())
		}
	})
	return errors.Join(errs...)
}
