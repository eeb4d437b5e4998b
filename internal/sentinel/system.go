package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// SystemOptions wire a whole Sentinel from config; every func is an
// optional seam owned by another component (sessions, subagents, tools,
// feedback tracker, daily plan).
type SystemOptions struct {
	Paths    config.Paths
	Config   config.SentinelConfig
	Provider llm.Provider // nil: the planner skips every tick
	Model    string

	// Post delivers proactive messages (hub.Post); may be bound later with
	// System.Dispatcher.SetPost.
	Post    executor.PostFunc
	Targets executor.TargetsFunc
	// Sessions lists active sessions; LastActivity feeds the defer manager.
	Sessions     func(since time.Time) []ActiveSession
	LastActivity func(session string) (time.Time, bool)
	Spawn        executor.SpawnFunc
	Tool         executor.ToolFunc
	Routines     func(history string) []Routine
	Calendar     func(now time.Time) []CalendarEntry
	PlanSlots    func(day time.Time) []PlanSlot
	Triggers     func(ctx context.Context) ([]string, error)

	// Feedback and TrimFeedback are the feedback tracker; OnDelivered
	// records each delivery as dispatched.
	Feedback     AcceptanceSource
	TrimFeedback func(ctx context.Context) error
	OnDelivered  executor.DeliveredFunc

	Clock  clock.Clock
	Logger *slog.Logger
}

// System is a wired Sentinel. One Store instance is shared by the policy,
// the injector and the defer manager.
type System struct {
	Store      *statefile.Store
	Policy     *policy.Policy
	Assembler  *Assembler
	Planner    *Planner
	Dispatcher *executor.NudgeDispatcher
	Injector   *executor.NudgeInjector
	Defer      *executor.DeferManager
	Spawn      *executor.ProactiveSpawn
	Pending    *executor.PendingDecisionStore
	Router     *executor.DecisionRouter
	Actions    *executor.ActionExecutor
	Consumer   *executor.DecisionConsumer
	Discoverer *TaskDiscoverer
	Runner     *Runner
}

// NewSystem builds every component from o.
func NewSystem(o SystemOptions) (*System, error) {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := o.Logger.With("component", "sentinel")
	cfg := o.Config
	store, err := statefile.Open(o.Paths.SentinelState(), statefile.Options{Clock: o.Clock, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("sentinel: %w", err)
	}
	prefs := policy.NewPreferencesReader(o.Paths.Preferences(), log)
	pol, err := policy.New(cfg.Policy, policy.Options{Clock: o.Clock, Store: store, Logger: log, Overrides: prefs.Overrides})
	if err != nil {
		return nil, fmt.Errorf("sentinel: %w", err)
	}
	s := &System{Store: store, Policy: pol}
	s.Dispatcher = executor.NewDispatcher(executor.DispatcherOptions{Gate: pol, Post: o.Post, Targets: o.Targets, OnDelivered: o.OnDelivered, Clock: o.Clock, Logger: log})
	if s.Injector, err = executor.NewInjector(executor.InjectorOptions{Store: store, Gate: pol, TTL: cfg.InjectTTL.D(), Cap: cfg.InjectCap, OnDelivered: o.OnDelivered, Clock: o.Clock, Logger: log}); err != nil {
		return nil, err
	}
	if s.Defer, err = executor.NewDeferManager(executor.DeferOptions{
		Store: store, Gate: pol, Dispatch: s.Dispatcher.Dispatch, LastActivity: o.LastActivity,
		IdleThreshold: cfg.DeferIdle.D(), MaxWait: cfg.DeferMaxWait.D(), PollInterval: cfg.DeferPoll.D(), Clock: o.Clock, Logger: log,
	}); err != nil {
		return nil, err
	}
	s.Spawn = executor.NewSpawn(executor.SpawnOptions{Gate: pol, Spawn: o.Spawn, Targets: o.Targets, OnDelivered: o.OnDelivered, Logger: log})
	s.Pending = executor.NewPendingDecisionStore(o.Paths.PendingDecisions(), cfg.PendingTTL.D(), o.Clock)
	s.Router = executor.NewRouter(executor.RouterOptions{Provider: o.Provider, Model: o.Model, MinConfidence: cfg.DecisionConfidence, Logger: log})
	s.Actions = executor.NewActionExecutor(executor.ActionExecutorOptions{Gate: pol, Injector: s.Injector, Spawn: s.Spawn, Tool: o.Tool, OnDelivered: o.OnDelivered, Logger: log})
	s.Consumer = executor.NewConsumer(executor.ConsumerOptions{Store: s.Pending, Router: s.Router, Executor: s.Actions, Confirm: cfg.DecisionConfirm, Logger: log})
	s.Assembler = NewAssembler(AssemblerOptions{
		MemoryPath: o.Paths.Memory(), HistoryPath: o.Paths.History(), AttentionPath: o.Paths.Attention(), BehaviorsPath: o.Paths.Behaviors(),
		MemoryMaxBytes: cfg.MemoryMaxBytes, HistoryTailBytes: cfg.HistoryTailBytes, AttentionSections: cfg.AttentionSections,
		BehaviorsLines: cfg.BehaviorsLines, BehaviorsTailBytes: cfg.BehaviorsTailBytes, ActiveWindow: cfg.ActiveWindow.D(),
		Sessions: o.Sessions, Routines: o.Routines, Calendar: o.Calendar, Policy: pol, Clock: o.Clock, Logger: log,
	})
	s.Planner = NewPlanner(o.Provider, o.Model, log)
	var discover func(context.Context, PlannerContext) executor.Result
	if cfg.Discovery && o.Provider != nil {
		s.Discoverer = &TaskDiscoverer{Provider: o.Provider, Model: o.Model, Store: s.Pending, Dispatcher: s.Dispatcher, MaxOptions: cfg.DiscoveryOptions, Logger: log}
		discover = s.Discoverer.Discover
	}
	var tuner Tuner
	if o.Feedback != nil {
		tuner = pol
	}
	s.Runner, err = NewRunner(RunnerOptions{
		Assembler: s.Assembler, Planner: s.Planner, Dispatcher: s.Dispatcher, Injector: s.Injector, Defer: s.Defer, Spawn: s.Spawn,
		PlanSlots: o.PlanSlots, DeadlineFallback: cfg.DeadlineFallback,
		Feedback: o.Feedback, Tuner: tuner, FeedbackWindow: cfg.FeedbackWindow.D(), TrimFeedback: o.TrimFeedback,
		Discover: discover, DiscoveryHour: cfg.DiscoveryHour, Triggers: o.Triggers, TriggerInterval: cfg.TriggerPoll.D(),
		TickLogPath: o.Paths.TickLog(), Interval: cfg.Interval.D(), DedupTTL: cfg.DedupTTL.D(), Clock: o.Clock, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}
