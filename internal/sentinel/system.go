package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/calendar"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/sentinel/when"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/statefile"
)

// SystemOptions wire a whole Sentinel from config; every func is an
// optional seam owned by another component (sessions, subagents, tools,
// daily plan).
type SystemOptions struct {
	Paths    Paths
	Config   Config
	Provider llm.Provider // nil: the planner skips every tick
	Model    string

	// Post delivers proactive messages (hub.Post); may be bound later with
	// System.Dispatcher.SetPost.
	Post executor.PostFunc
	// Targets resolves a session to outlets. Nil: DefaultTargets over
	// Sessions and HasOutlet.
	Targets executor.TargetsFunc
	// HasOutlet reports whether this process can deliver to a channel
	// (hub.Has); the default target skips sessions on channels it cannot
	// reach. Nil: every channel counts.
	HasOutlet func(channel string) bool
	// Sessions lists owner sessions (session.Store.Active fits); it feeds
	// the assembler, the open-loops producer and the default target.
	Sessions SessionLister
	// LastActivity feeds the defer manager (session.Store.LastActivity fits).
	LastActivity func(ctx context.Context, session string) (time.Time, bool)
	// RunAgent starts micro-agents for spawn_agent decisions and spawn
	// picks; their results reach the owner through the dispatcher (the
	// owner's session, feedback), like any nudge.
	RunAgent executor.SpawnRunner
	// Spawn is the deprecated spawn seam whose results bypass the
	// dispatcher; used only when RunAgent is nil.
	Spawn executor.SpawnFunc
	// Tools runs the agent's tools for a picked tool option (the agent's
	// tools.Registry); nil: tool options are refused with a reason.
	Tools    executor.ToolRunner
	Routines func(history string) []Routine // nil: the built-in learner (sentinel.routines)
	Calendar func(now time.Time) []CalendarEntry

	// ToolNames lists the tools task discovery may offer to run (see
	// ToolInfosFrom); used only with Tools.
	ToolNames func() []ToolInfo

	// PlanSlots overrides the daily-plan producer (sentinel.plan) with a
	// fixed plan.
	PlanSlots func(day time.Time) []PlanSlot

	// Messages pages through conversation messages for the behaviors
	// extractor (session.Store.Since fits); nil leaves it off.
	Messages func(ctx context.Context, since time.Time, limit int) ([]session.Entry, error)

	// Feedback is the nudge feedback tracker; nil builds one on
	// Paths.Feedback. Every delivery is recorded in it as dispatched.
	Feedback *feedback.Tracker
	// OnDelivered observes each delivery after it was recorded.
	OnDelivered executor.DeliveredFunc
	// OnTick observes every tick's record (decision, route, verdict).
	OnTick func(TickRecord)

	// Getenv reads the owner's locale for sentinel.date_order "auto"
	// (os.Getenv); nil reads numeric dates day first.
	Getenv func(string) string

	Clock  clock.Clock
	Logger *slog.Logger
}

// System is a wired Sentinel. One Store instance is shared by the policy,
// the injector and the defer manager.
type System struct {
	Store     *statefile.Store
	Policy    *policy.Policy
	Feedback  *feedback.Tracker
	Attention *attention.Updater // nil when sentinel.attention is off
	// Plan is the daily-plan producer; nil when sentinel.plan is off or
	// SystemOptions.PlanSlots replaced it.
	Plan       *DailyPlan
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
	// Behaviors is nil unless sentinel.behaviors.enabled, a model and a
	// message source are all present.
	Behaviors *predictor.BehaviorsExtractor
	// Analysis is the daily analysis service; nil unless
	// sentinel.analysis.enabled and a model is configured.
	Analysis *predictor.DailyAnalysis
	// Routines keeps the learned routines (sentinel/routines.json); nil
	// when sentinel.routines is off.
	Routines *predictor.RoutineStore
	// Preferences learns preferences.json entries from dismissals; it runs
	// on every dismissal RecordVerdict records.
	Preferences *PreferenceLearner
	Runner      *Runner

	log           *slog.Logger
	onDelivered   executor.DeliveredFunc
	deadlines     attention.Deadlines
	deadlineInput func(context.Context) attention.Input
}

// calendarSource is the caller's calendar function, else the iCalendar
// files sentinel.calendar.path names, else none.
func calendarSource(o SystemOptions, cfg Config, log *slog.Logger) func(time.Time) []CalendarEntry {
	if o.Calendar != nil || cfg.Calendar.Path == "" {
		return o.Calendar
	}
	src := calendar.New(cfg.Calendar, cfg.Policy.Location, log)
	return func(now time.Time) []CalendarEntry {
		evs, err := src.Events(now)
		if err != nil {
			log.Warn("sentinel: calendar partly unreadable", "path", cfg.Calendar.Path, "err", err)
		}
		out := make([]CalendarEntry, len(evs))
		for i, e := range evs {
			out[i] = CalendarEntry{Title: e.Title, Start: e.Start, End: e.End, Location: e.Location, AllDay: e.AllDay}
		}
		return out
	}
}

// Deadlines lists the deadlines as the attention file and the daily plan
// see them now, each with what an informal date was resolved from.
func (s *System) Deadlines(ctx context.Context) []attention.Item {
	return s.deadlines.Items(s.deadlineInput(ctx))
}

// DefaultTargetWindow bounds how far back the default target is looked for.
const DefaultTargetWindow = 7 * 24 * time.Hour

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
	store, err := statefile.Open(o.Paths.State, statefile.Options{Clock: o.Clock, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("sentinel: %w", err)
	}
	prefs := policy.NewPreferencesReader(o.Paths.Preferences, log)
	pol, err := policy.New(cfg.Policy, policy.Options{Clock: o.Clock, Store: store, Logger: log, Overrides: prefs.Overrides})
	if err != nil {
		return nil, fmt.Errorf("sentinel: %w", err)
	}
	s := &System{Store: store, Policy: pol, Feedback: o.Feedback, log: log, onDelivered: o.OnDelivered}
	if s.Feedback == nil {
		s.Feedback = feedback.NewTracker(o.Paths.Feedback, feedback.Options{Clock: o.Clock, Logger: log})
	}
	if o.Provider == nil {
		log.Info("sentinel: no model configured; the planner skips every tick (set \"model\" or sentinel.planner_model)")
	}
	targets := o.Targets
	if targets == nil && o.Sessions != nil {
		targets = DefaultTargets(o.Sessions, o.HasOutlet, o.Clock, log)
	}
	delivered := s.recordDelivery

	s.Pending = executor.NewPendingDecisionStore(o.Paths.PendingDecisions, cfg.PendingTTL.D(), o.Clock)
	s.Dispatcher = executor.NewDispatcher(executor.DispatcherOptions{Gate: pol, Post: o.Post, Targets: targets, Menus: s.Pending, OnDelivered: delivered, Clock: o.Clock, Logger: log})
	if s.Injector, err = executor.NewInjector(executor.InjectorOptions{Store: store, Gate: pol, TTL: cfg.InjectTTL.D(), Cap: cfg.InjectCap, OnDelivered: delivered, Clock: o.Clock, Logger: log}); err != nil {
		return nil, err
	}
	if s.Defer, err = executor.NewDeferManager(executor.DeferOptions{
		Store: store, Gate: pol, Dispatch: s.Dispatcher.Dispatch, Targets: s.Dispatcher.Targets, LastActivity: o.LastActivity,
		IdleThreshold: cfg.DeferIdle.D(), MaxWait: cfg.DeferMaxWait.D(), PollInterval: cfg.DeferPoll.D(), Clock: o.Clock, Logger: log,
	}); err != nil {
		return nil, err
	}
	if o.RunAgent == nil && o.Spawn != nil {
		log.Info("sentinel: spawn results bypass the dispatcher (not recorded in the owner's session, not tracked for feedback); pass SystemOptions.RunAgent")
	}
	s.Spawn = executor.NewSpawn(executor.SpawnOptions{Gate: pol, Run: o.RunAgent, Deliver: s.Dispatcher.DeliverCharged, Spawn: o.Spawn, Targets: targets, OnDelivered: delivered, Logger: log})
	s.Router = executor.NewRouter(executor.RouterOptions{Provider: o.Provider, Model: o.Model, MinConfidence: cfg.DecisionConfidence, Logger: log})
	s.Actions = executor.NewActionExecutor(executor.ActionExecutorOptions{Gate: pol, Injector: s.Injector, Spawn: s.Spawn, Tools: o.Tools, OnDelivered: delivered, Clock: o.Clock, Logger: log})
	s.Consumer = executor.NewConsumer(executor.ConsumerOptions{Store: s.Pending, Router: s.Router, Executor: s.Actions, Confirm: cfg.DecisionConfirm, Logger: log})
	if s.Analysis, err = newAnalysis(o, store, o.Clock, log); err != nil {
		return nil, err
	}
	sections := cfg.AttentionSections
	if s.Analysis != nil && cfg.Attention {
		sections = withAnalysisSections(sections)
	}
	routines := o.Routines
	var learned *predictor.RoutineStore
	if cfg.Routines.Enabled {
		learned = routineStore(o.Paths, cfg, o.Clock, log)
		s.Routines = learned
	}
	if routines == nil && learned != nil {
		routines = func(string) []Routine { return toRoutines(learned.Routines()) }
	}
	s.Assembler = NewAssembler(AssemblerOptions{
		MemoryPath: o.Paths.Memory, HistoryPath: o.Paths.History, AttentionPath: o.Paths.Attention, BehaviorsPath: o.Paths.Behaviors,
		MemoryMaxBytes: cfg.MemoryMaxBytes, HistoryTailBytes: cfg.HistoryTailBytes, AttentionSections: sections,
		BehaviorsLines: cfg.BehaviorsLines, BehaviorsTailBytes: cfg.BehaviorsTailBytes, ActiveWindow: cfg.ActiveWindow.D(),
		Sessions: ActiveSessions(o.Sessions), Routines: routines, Calendar: calendarSource(o, cfg, log), Policy: pol, Clock: o.Clock, Logger: log,
	})
	var refreshers []func(context.Context)
	ao := attention.Options{
		Path: o.Paths.Attention, MemoryPath: o.Paths.Memory, HistoryPath: o.Paths.History,
		MemoryMaxBytes: cfg.MemoryMaxBytes, HistoryTailBytes: cfg.HistoryTailBytes,
		Sessions: attentionSessions(o.Sessions), SessionWindow: cfg.OpenLoopWindow.D(),
		Location: cfg.Policy.Location, Clock: o.Clock, Logger: log,
	}
	deadlines := attention.Deadlines{Horizon: cfg.DeadlineHorizon.D(), Dates: when.Resolver{Order: when.OrderFor(cfg.DateOrder, o.Getenv)}}
	s.deadlines = deadlines
	s.deadlineInput = attention.NewUpdater(attention.Options{
		MemoryPath: ao.MemoryPath, HistoryPath: ao.HistoryPath, MemoryMaxBytes: ao.MemoryMaxBytes,
		HistoryTailBytes: ao.HistoryTailBytes, Location: ao.Location, Clock: o.Clock, Logger: log,
	}).Input
	planSlots := o.PlanSlots
	if planSlots == nil && cfg.Plan.Enabled {
		var learn func(string) []predictor.Routine
		if learned != nil {
			learn = func(string) []predictor.Routine { return learned.Routines() }
		}
		s.Plan = NewDailyPlan(DailyPlanOptions{
			Routines: learn, Deadlines: deadlines, Input: s.deadlineInput,
			Location: cfg.Policy.Location, Clock: o.Clock, Logger: log,
		})
		planSlots = s.Plan.Slots
	}
	if cfg.Attention {
		ao.Producers = []attention.Producer{deadlines, attention.OpenLoops{Window: cfg.OpenLoopWindow.D()}}
		if s.Analysis != nil {
			ao.Producers = append(ao.Producers, analysisProducers(s.Analysis)...)
		}
		if s.Plan != nil {
			// The same computation feeds the runner: the section is
			// what the scheduled-fire path will do today.
			ao.Producers = append(ao.Producers, s.Plan)
		}
		s.Attention = attention.NewUpdater(ao)
		refreshers = append(refreshers, func(ctx context.Context) { s.Attention.Update(ctx) })
	} else if s.Plan != nil {
		refreshers = append(refreshers, s.Plan.Refresh)
	}
	if s.Behaviors, err = newBehaviors(o, store, log); err != nil {
		return nil, err
	}
	if s.Behaviors != nil {
		refreshers = append(refreshers, func(ctx context.Context) { s.Behaviors.MaybeRun(ctx) })
	}
	var refresh func(context.Context)
	if len(refreshers) > 0 {
		refresh = func(ctx context.Context) {
			for _, f := range refreshers {
				f(ctx)
			}
		}
	}
	if s.Preferences, err = NewPreferenceLearner(PreferenceLearnerOptions{Path: o.Paths.Preferences, Feedback: s.Feedback, Policy: cfg.Policy, Clock: o.Clock, Logger: log}); err != nil {
		return nil, err
	}
	s.Planner = NewPlanner(o.Provider, o.Model, log)
	// Discovery is part of the Sentinel: wherever a model is configured it
	// can run on demand; sentinel.discovery only switches the daily run off.
	var discover func(context.Context, PlannerContext) executor.Result
	if o.Provider != nil {
		s.Discoverer = &TaskDiscoverer{Provider: o.Provider, Model: o.Model, Store: s.Pending, Dispatcher: s.Dispatcher, MaxOptions: cfg.DiscoveryOptions, Logger: log}
		if o.Tools != nil {
			// A tool nobody can run is never offered.
			s.Discoverer.ToolNames = o.ToolNames
		}
		discover = s.Discoverer.Discover
	}
	s.Runner, err = NewRunner(RunnerOptions{
		Assembler: s.Assembler, Planner: s.Planner, Dispatcher: s.Dispatcher, Injector: s.Injector, Defer: s.Defer, Spawn: s.Spawn,
		PlanSlots: planSlots, DeadlineFallback: cfg.DeadlineFallback, State: store,
		Feedback: s.Feedback, Tuner: pol, FeedbackWindow: cfg.FeedbackWindow.D(),
		TrimFeedback: func(ctx context.Context) error { _, err := s.Feedback.MaybeTrim(ctx); return err },
		Refresh:      refresh,
		Discover:     discover, DiscoveryHour: cfg.DiscoveryHour, NoDailyDiscovery: !cfg.Discovery,
		TickLogPath: o.Paths.TickLog, OnTick: o.OnTick, Interval: cfg.Interval.D(), DedupTTL: cfg.DedupTTL.D(), Clock: o.Clock, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// recordDelivery is every executor's OnDelivered: the nudge goes into the
// feedback log as dispatched under the policy's fire ID, so a later verdict
// (tool or CLI) finds it.
func (s *System) recordDelivery(ctx context.Context, d executor.Delivery) {
	if d.NudgeID == "" {
		s.log.Warn("sentinel: delivery without a nudge id; not tracked for feedback", "action", d.Action, "session", d.Session)
	} else {
		topic := d.Topic
		if topic == "" {
			topic = policy.DeriveTopic(d.Content) // the tag the policy charged
		}
		rec := feedback.Record{
			Time: d.At, NudgeID: d.NudgeID, Topic: topic, Session: d.Session, Action: d.Action,
			Priority: string(d.Priority), Source: feedback.SourceSentinel, Content: d.Content,
		}
		if err := s.Feedback.RecordDispatched(ctx, rec); err != nil {
			s.log.Warn("sentinel: delivered nudge not logged for feedback", "nudge_id", d.NudgeID, "err", err)
		}
	}
	if s.onDelivered != nil {
		s.onDelivered(ctx, d)
	}
}

// RecordVerdict records the owner's verdict on a nudge in the feedback log
// and feeds it to the policy (dismissal cooldown, topic statistics, learned
// quiet hours). The nudge_feedback tool and `raven nudges feedback` both go
// through it. An unknown ID matches feedback.ErrUnknownNudge and changes
// nothing.
func (s *System) RecordVerdict(ctx context.Context, nudgeID, verdict, session, reason string) (feedback.Record, error) {
	rec, err := s.Feedback.RecordVerdict(ctx, nudgeID, verdict, session, reason)
	if err != nil {
		return rec, err
	}
	if err := s.Policy.RecordOutcome(ctx, rec.NudgeID, verdict); err != nil {
		return rec, fmt.Errorf("sentinel: %s on %s logged, but the policy was not updated: %w", verdict, nudgeID, err)
	}
	if verdict == feedback.EventDismissed {
		// A failed learn costs nothing but the lesson; the verdict stands.
		if _, err := s.Preferences.Learn(ctx); err != nil {
			s.log.Warn("sentinel: preferences not learned", "err", err)
		}
	}
	return rec, nil
}

// FeedbackTool is the nudge_feedback tool for the agent's registry.
func (s *System) FeedbackTool() *feedback.Tool { return feedback.NewTool(s) }

// DefaultTargets sends a nudge for a session to that session, and one
// without a session to the owner's most recently active session (within
// DefaultTargetWindow) on a channel hasOutlet accepts (nil: any channel).
func DefaultTargets(list SessionLister, hasOutlet func(channel string) bool, clk clock.Clock, log *slog.Logger) executor.TargetsFunc {
	return func(session string) []executor.Target {
		if session != "" {
			return nil // the dispatcher splits "channel:chat_id" itself
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ss, err := list(ctx, clk.Now().Add(-DefaultTargetWindow))
		if err != nil {
			log.Warn("sentinel: no default target; sessions unavailable", "err", err)
			return nil
		}
		for _, sm := range ss {
			if sm.Channel != "" && sm.ChatID != "" && (hasOutlet == nil || hasOutlet(sm.Channel)) {
				return []executor.Target{{Channel: sm.Channel, ChatID: sm.ChatID}}
			}
		}
		return nil
	}
}
