package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

// Options configure a run.
type Options struct {
	// Days and Seed override the scenario's when > 0.
	Days int
	Seed int64
	// Base is the configuration the scenario's overrides apply to
	// (default config.Default()); BaseName labels it in the report.
	Base     *config.Config
	BaseName string
	// Dir is the parent of the run's temporary data directory.
	Dir string
	// Logger receives the runtime's logs (default discarded).
	Logger *slog.Logger
	// StepTimeout bounds, in real time, one asynchronous step (a turn, a
	// cron fire); default 10s. The run never sleeps.
	StepTimeout time.Duration
	// Model is the planner's model for planner kind "model"
	// (provider/model); empty: the configuration's.
	Model string
	// Counter, when set, also receives every model call (the usage
	// accounting); the report always uses the run's own Meter.
	Counter Counter
}

// ErrStep is returned when the runtime did not finish a step in time.
var ErrStep = errors.New("simulate: step did not finish")

// DefaultStepTimeout bounds one asynchronous step.
const DefaultStepTimeout = 10 * time.Second

// ReactionWindow: a reaction is told to the agent within this of the
// nudge being seen (the default react_after).
const defaultReactAfter = 2 * time.Minute

// messageAttach is how long an owner message attaches an absent owner.
const messageAttach = 30 * time.Minute

// Run plays sc through the assembled runtime and reports what happened.
func Run(ctx context.Context, sc Scenario, o Options) (*Report, error) {
	if o.Days > 0 {
		sc.Days = o.Days
	}
	if o.Seed > 0 {
		sc.Seed = o.Seed
	}
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp(o.Dir, "raven-simulate-")
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer os.RemoveAll(dir)
	w, err := newWorld(sc, o, dir)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	runErr := w.run(ctx)
	if err := w.closeRuntime(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return nil, runErr
	}
	w.rep.WallMillis = time.Since(began).Milliseconds()
	return w.rep, nil
}

type world struct {
	sc    Scenario
	o     Options
	dir   string
	paths config.Paths
	cfg   config.Config
	clk   *clock.Fake
	tl    *timeline
	owner *owner
	meter *Meter
	rep   *Report
	end   time.Time

	planner llm.Provider // metered, outage-wrapped
	agent   llm.Provider
	rt      *runtime.Runtime

	// the owner's open surface
	surface     string // "" when detached
	detach      func()
	attachUntil time.Time // an attach by a message lasts until then

	mu   sync.Mutex
	seen []seenMsg // deliveries to the owner's surface not yet handled

	shownIDs map[string]int
	// nudgeByContent finds a shown nudge's id (see handleSeen).
	nudgeByContent map[string]string
	reactions      []reaction
	messages       []timedMessage
	checks         []time.Time // attach-state changes
	travels        []time.Time
	outages        [][2]time.Time
	cronFired      chan string
	days           map[string]*DayStats
	inputsSeen     map[string]bool
	lastMult       float64
	lastDND        string
	lastPrefs      string
	tickAt         time.Time
	hbAt           time.Time
}

type seenMsg struct {
	at time.Time
	m  spine.Message
}

type reaction struct {
	at      time.Time
	nudgeID string
	verdict string
}

type timedMessage struct {
	at   time.Time
	text string
}

func newWorld(sc Scenario, o Options, dir string) (*world, error) {
	tl, err := newTimeline(sc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	paths, err := config.NewPaths(dir)
	if err != nil {
		return nil, err
	}
	cfg, changed, err := buildConfig(sc, o, dir)
	if err != nil {
		return nil, err
	}
	w := &world{
		sc: sc, o: o, dir: dir, paths: paths, cfg: cfg, tl: tl, clk: clock.NewFake(tl.start), meter: NewMeter(),
		end: tl.at(sc.Days-1, "00:00").AddDate(0, 0, 1), shownIDs: map[string]int{}, nudgeByContent: map[string]string{}, cronFired: make(chan string, 64),
		days: map[string]*DayStats{}, inputsSeen: map[string]bool{},
	}
	w.owner = &owner{sc: sc.Owner, tl: tl, rng: rand.New(rand.NewPCG(uint64(sc.Seed), 0x5eed))}
	w.rep = &Report{
		Scenario: cmpOr(sc.Name, "unnamed"), Config: cmpOr(o.BaseName, "default"), Planner: sc.Planner.Kind,
		Start: sc.Start, Days: sc.Days, Seed: sc.Seed, Changed: changed, DayQuota: cfg.Sentinel.Policy.DayQuota,
		Ticks:         TickStats{ByRoute: map[string]int{}},
		Nudges:        NudgeStats{DeniedByLayer: map[string]int{}},
		deadlineSlots: map[string]*Slot{},
	}
	for _, z := range tl.zones {
		w.rep.Zones = append(w.rep.Zones, z.loc.String())
	}
	for i, z := range tl.zones[1:] {
		w.rep.Travel = append(w.rep.Travel, TravelReport{At: stamp(z.from, tl.zones[i].loc), From: tl.zones[i].loc.String(), To: z.loc.String()})
		w.travels = append(w.travels, z.from)
	}
	for _, out := range sc.Planner.Outages {
		win := [2]time.Time{tl.at(out.Day, out.From), tl.at(out.Day, out.To)}
		w.outages = append(w.outages, win)
		w.rep.Outages = append(w.rep.Outages, OutageReport{From: stamp(win[0], tl.zone(win[0])), To: stamp(win[1], tl.zone(win[0]))})
	}
	if err := w.buildModels(); err != nil {
		return nil, err
	}
	w.planSchedule()
	return w, nil
}

// buildConfig is the base config with the Sentinel on, the owner's zone and
// the scenario's overrides, validated as `raven config set` would.
func buildConfig(sc Scenario, o Options, dir string) (config.Config, []string, error) {
	base := config.Default()
	if o.Base != nil {
		base = *o.Base
	}
	// The scenario's overrides go through the config file machinery: the
	// same keys, parsing and validation as `raven config set`.
	file := filepath.Join(dir, "scenario-config.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		return base, nil, err
	}
	keys := make([]string, 0, len(sc.Config))
	for k := range sc.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := config.Set(file, k, sc.Config[k]); err != nil {
			return base, nil, fmt.Errorf("%w: config %s: %w", ErrScenario, k, err)
		}
	}
	over, err := config.Load(file)
	if err != nil {
		return base, nil, fmt.Errorf("%w: config: %w", ErrScenario, err)
	}
	cfg, err := config.Apply(base, over, keys)
	if err != nil {
		return base, nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	// A simulation of proactivity needs the Sentinel, which is off by
	// default; the run drives its ticks itself, as `raven sentinel tick` does.
	cfg.Sentinel.Enabled = true
	if strings.TrimSpace(sc.Calendar) != "" {
		ics := filepath.Join(dir, "calendar.ics")
		if err := os.WriteFile(ics, []byte(sc.Calendar), 0o600); err != nil {
			return base, nil, err
		}
		cfg.Sentinel.Calendar.Path = ics
	}
	loc, _ := time.LoadLocation(sc.Timezone)
	cfg.Sentinel.Policy.Location = loc
	if err := cfg.Validate(); err != nil {
		return base, nil, fmt.Errorf("%w: config: %w", ErrScenario, err)
	}
	return cfg, config.Changed(config.Default(), cfg), nil
}

func (w *world) counter() Counter {
	if w.o.Counter == nil {
		return w.meter
	}
	return multiCounter{w.meter, w.o.Counter}
}

type multiCounter []Counter

func (m multiCounter) Add(origin string, u llm.Usage, err error) {
	for _, c := range m {
		c.Add(origin, u, err)
	}
}

func (w *world) buildModels() error {
	var p llm.Provider
	switch w.sc.Planner.Kind {
	case PlannerNudgeEveryTick:
		p = &everyTick{}
	case PlannerSkip:
		p = skipper{}
	case PlannerScripted:
		var ds []timedDecision
		for _, d := range w.sc.Planner.Script {
			ds = append(ds, timedDecision{at: w.tl.at(d.Day, d.At), d: d})
		}
		p = newScripted(w.clk, ds)
	case PlannerModel:
		c := w.cfg
		c.Model = cmpOr(w.o.Model, w.cfg.PlannerModel())
		real, err := runtime.NewProvider(c, w.clk, w.o.Logger)
		if err != nil {
			return fmt.Errorf("simulate: planner kind %q needs a configured model (config \"model\" or sentinel.planner_model): %w", PlannerModel, err)
		}
		p = real
		w.rep.Planner = PlannerModel + " " + real.Name()
	}
	w.planner = metered{inner: outage{inner: p, clk: w.clk, windows: w.outages}, count: w.counter()}
	w.agent = metered{inner: &agentStub{clk: w.clk, loc: func() *time.Location { return w.tl.zone(w.clk.Now()) }, hbDays: map[string]bool{}}, count: w.counter()}
	return nil
}

// planSchedule lays the owner's messages and attach changes on the clock.
func (w *world) planSchedule() {
	for d := 0; d < w.sc.Days; d++ {
		for _, m := range w.sc.Owner.Messages {
			days, _ := parseWeekdays(m.Days)
			t := w.tl.at(d, m.At)
			wd := t.In(w.tl.zone(t)).Weekday()
			switch {
			case m.Day != nil && *m.Day != d:
				continue
			case len(days) > 0 && !slicesContains(days, wd):
				continue
			}
			w.messages = append(w.messages, timedMessage{at: t, text: m.Text})
		}
		for _, a := range w.sc.Owner.Attached {
			w.checks = append(w.checks, w.tl.at(d, a.From), w.tl.at(d, a.To))
		}
	}
	w.checks = append(w.checks, w.travels...)
	sort.SliceStable(w.messages, func(i, j int) bool { return w.messages[i].at.Before(w.messages[j].at) })
	sort.Slice(w.checks, func(i, j int) bool { return w.checks[i].Before(w.checks[j]) })
}

func slicesContains(days []time.Weekday, d time.Weekday) bool {
	for _, x := range days {
		if x == d {
			return true
		}
	}
	return false
}

// setup writes the owner's files and builds the runtime.
func (w *world) setup(ctx context.Context) error {
	mem := strings.TrimRight(w.sc.Memory, "\n")
	if len(w.sc.Deadlines) > 0 {
		mem += "\n\n## Deadlines\n"
		for _, d := range w.sc.Deadlines {
			mem += "- " + d.written() + "\n"
		}
	}
	if strings.TrimSpace(mem) != "" {
		if err := writeFile(w.paths.Memory(), mem+"\n"); err != nil {
			return err
		}
		// Written at the start of the run: what "Friday" is read against.
		if err := os.Chtimes(w.paths.Memory(), w.clk.Now(), w.clk.Now()); err != nil {
			return err
		}
	}
	if strings.TrimSpace(w.sc.Heartbeat) != "" {
		if err := writeFile(w.paths.Heartbeat(), w.sc.Heartbeat); err != nil {
			return err
		}
	}
	if strings.TrimSpace(w.sc.History) != "" {
		if err := writeFile(w.paths.History(), strings.TrimRight(w.sc.History, "\n")+"\n"); err != nil {
			return err
		}
	}
	if err := w.buildRuntime(ctx); err != nil {
		return err
	}
	for _, j := range w.sc.Cron {
		spec := cron.Spec{Name: j.Name, Message: j.Message, Cron: j.Cron, Every: j.Every, At: j.At, TZ: j.TZ,
			Deliver: true, Channel: "cli", To: "direct"}
		if spec.Cron != "" && spec.TZ == "" {
			spec.TZ = w.sc.Timezone
		}
		job, err := cron.NewJob(spec, w.clk.Now())
		if err != nil {
			return fmt.Errorf("%w: cron %s: %w", ErrScenario, j.Name, err)
		}
		if _, err := w.rt.CronStore().Add(ctx, job); err != nil {
			return err
		}
	}
	w.rt.Cron().Poke()
	return nil
}

// written is the deadline's MEMORY.md line.
func (d Deadline) written() string {
	if d.Line != "" {
		return d.Line
	}
	return d.Due + " " + d.Text
}

// planned reports whether a deadline slot of the run's plans carried d on
// the day it is due (at its time when it has one): the resolver read the
// line as the scenario says it means.
func (w *world) planned(d Deadline) bool {
	due, hasTime, err := parseDue(d.Due, time.UTC)
	if err != nil {
		return false
	}
	for _, s := range w.rep.Deadlines.Slots {
		// The due day's slot is the high-priority one ("Due today…"); the
		// evening-before heads-up does not count.
		if s.Priority != string(sentinel.PriorityHigh) || !strings.Contains(s.Message, d.written()) || !strings.Contains(s.Window, due.Format("01-02")) {
			continue
		}
		if hasTime && !strings.Contains(s.Message, "at "+due.Format("15:04")+":") {
			continue
		}
		return true
	}
	return false
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o600)
}

func (w *world) buildRuntime(ctx context.Context) error {
	rt, err := runtime.Build(ctx, runtime.Options{
		Paths: w.paths, Config: w.cfg, Logger: w.o.Logger, Clock: w.clk,
		Provider: w.agent, PlannerProvider: w.planner, Services: runtime.ServiceCron,
		WrapCronHandler: func(h cron.Handler) cron.Handler {
			return func(ctx context.Context, job cron.Job, at time.Time) (cron.Outcome, error) {
				out, err := h(ctx, job, at)
				select {
				case w.cronFired <- job.ID:
				default:
				}
				return out, err
			}
		},
	})
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	w.rt = rt
	return nil
}

func (w *world) closeRuntime() error {
	if w.rt == nil {
		return nil
	}
	if w.detach != nil {
		w.detach()
		w.detach = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.o.StepTimeout)
	defer cancel()
	err := w.rt.Close(ctx)
	w.rt = nil
	return err
}

// surface is the owner's open terminal or TUI.
type surface struct{ w *world }

func (s surface) Deliver(_ context.Context, m spine.Message) error {
	s.w.mu.Lock()
	s.w.seen = append(s.w.seen, seenMsg{at: s.w.clk.Now(), m: m})
	s.w.mu.Unlock()
	return nil
}

func (w *world) conv() string { return cmpOr(w.surface, "cli") + ":direct" }

// setAttached opens or closes the owner's surface.
func (w *world) setAttached(ctx context.Context, want string) error {
	if want == w.surface {
		return nil
	}
	if w.detach != nil {
		w.detach()
		w.detach = nil
	}
	w.surface = want
	if want == "" {
		return nil
	}
	detach, err := w.rt.AttachOwner(ctx, w.conv(), surface{w})
	if err != nil {
		return fmt.Errorf("simulate: attach: %w", err)
	}
	w.detach = detach
	return nil
}

func (w *world) wantAttached(now time.Time) string {
	if s := w.owner.attachedAt(now); s != "" {
		return s
	}
	if now.Before(w.attachUntil) {
		return cmpOr(w.surface, "cli")
	}
	return ""
}

func (w *world) run(ctx context.Context) error {
	if err := w.setup(ctx); err != nil {
		return err
	}
	snap := w.rt.Sentinel().Policy.SnapshotState()
	w.lastMult = snap.Multiplier
	w.lastDND = fmt.Sprint(snap.LearnedDNDHours)
	w.rep.Adaptive = AdaptiveStats{Start: snap.Multiplier, Min: snap.Multiplier, Max: snap.Multiplier}
	w.tickAt, w.hbAt = w.clk.Now(), w.clk.Now()
	reactAfter := defaultReactAfter
	if w.sc.Owner.ReactAfter != "" {
		reactAfter, _ = time.ParseDuration(w.sc.Owner.ReactAfter)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, ok := w.nextEvent(ctx)
		if !ok {
			break
		}
		// The clock reads in the owner's zone, as a process started in
		// it does (time.Local is the policy's default zone).
		now := next.In(w.tl.zone(next))
		w.clk.Set(now)
		for len(w.travels) > 0 && !w.travels[0].After(now) {
			w.travels = w.travels[1:]
			if err := w.travel(ctx); err != nil {
				return err
			}
		}
		for len(w.checks) > 0 && !w.checks[0].After(now) {
			w.checks = w.checks[1:]
		}
		if err := w.setAttached(ctx, w.wantAttached(now)); err != nil {
			return err
		}
		for len(w.messages) > 0 && !w.messages[0].at.After(now) {
			m := w.messages[0]
			w.messages = w.messages[1:]
			if err := w.say(ctx, m.text); err != nil {
				return err
			}
		}
		for len(w.reactions) > 0 && !w.reactions[0].at.After(now) {
			r := w.reactions[0]
			w.reactions = w.reactions[1:]
			if err := w.react(ctx, r); err != nil {
				return err
			}
		}
		if err := w.fireCron(ctx, now); err != nil {
			return err
		}
		if w.cfg.Heartbeat.Enabled && !w.hbAt.After(now) {
			w.hbAt = now.Add(w.cfg.Heartbeat.Interval.D())
			w.rep.Heartbeat.Ticks++
			before := w.meter.Calls(OriginHeartbeat)
			out, err := w.rt.Heartbeat().TickOnce(ctx)
			if err != nil {
				w.o.Logger.Warn("simulate: heartbeat tick failed", "err", err)
			}
			if out.Action == "run" {
				w.rep.Heartbeat.Ran++
			}
			w.rep.Heartbeat.ModelCalls += w.meter.Calls(OriginHeartbeat) - before
			if w.quiet(now) {
				w.rep.Heartbeat.QuietTicks++
				w.rep.Heartbeat.QuietModelCalls += w.meter.Calls(OriginHeartbeat) - before
			}
		}
		if !w.tickAt.After(now) {
			w.tickAt = now.Add(w.cfg.Sentinel.Interval.D())
			w.tick(ctx, now)
		}
		w.pollDefer(ctx, now)
		w.handleSeen(now, reactAfter)
	}
	return w.finish(ctx)
}

// nextEvent is the earliest pending event before the end.
func (w *world) nextEvent(ctx context.Context) (time.Time, bool) {
	cands := []time.Time{w.tickAt}
	if w.cfg.Heartbeat.Enabled {
		cands = append(cands, w.hbAt)
	}
	if len(w.checks) > 0 {
		cands = append(cands, w.checks[0])
	}
	if !w.attachUntil.IsZero() && w.attachUntil.After(w.clk.Now()) {
		cands = append(cands, w.attachUntil)
	}
	if len(w.messages) > 0 {
		cands = append(cands, w.messages[0].at)
	}
	if len(w.reactions) > 0 {
		cands = append(cands, w.reactions[0].at)
	}
	if len(w.travels) > 0 {
		cands = append(cands, w.travels[0])
	}
	if t, ok := w.nextCron(ctx); ok {
		cands = append(cands, t)
	}
	if pend, _ := w.rt.Sentinel().Defer.Pending(ctx); len(pend) > 0 {
		cands = append(cands, w.clk.Now().Add(w.cfg.Sentinel.DeferPoll.D()))
	}
	next := cands[0]
	for _, c := range cands[1:] {
		if c.Before(next) {
			next = c
		}
	}
	if next.Before(w.clk.Now()) {
		next = w.clk.Now()
	}
	return next, next.Before(w.end)
}

func (w *world) nextCron(ctx context.Context) (time.Time, bool) {
	jobs, err := w.rt.CronStore().Jobs(ctx)
	if err != nil {
		return time.Time{}, false
	}
	var next time.Time
	for _, j := range jobs {
		if j.Enabled && !j.NextRunAt.IsZero() && (next.IsZero() || j.NextRunAt.Before(next)) {
			next = j.NextRunAt
		}
	}
	return next, !next.IsZero()
}

// fireCron lets the real cron loop fire the jobs due now and waits until
// each fire is recorded (its claim cleared, its next run moved on).
func (w *world) fireCron(ctx context.Context, now time.Time) error {
	due := func() (int, error) {
		jobs, err := w.rt.CronStore().Jobs(ctx)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, j := range jobs {
			if j.Claim != nil || (j.Enabled && !j.NextRunAt.IsZero() && !j.NextRunAt.After(now)) {
				n++
			}
		}
		return n, nil
	}
	n, err := due()
	if err != nil || n == 0 {
		return err
	}
	w.rt.Cron().Poke()
	deadline := time.Now().Add(w.o.StepTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.cronFired:
			w.rep.Cron.Fires++
		case <-tick.C:
			n, err := due()
			if err != nil {
				return err
			}
			if n == 0 {
				for {
					select {
					case <-w.cronFired:
						w.rep.Cron.Fires++
					default:
						return nil
					}
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %d cron jobs due at %s", ErrStep, n, now)
			}
			w.rt.Cron().Poke()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// say submits an owner message as a user turn and waits for its reply.
func (w *world) say(ctx context.Context, text string) error {
	if w.surface == "" {
		w.attachUntil = w.clk.Now().Add(messageAttach)
		if err := w.setAttached(ctx, "cli"); err != nil {
			return err
		}
	}
	w.rep.Owner.Messages++
	return w.turn(ctx, text)
}

func (w *world) turn(ctx context.Context, text string) error {
	ch, id, _ := spine.SplitConversationKey(w.conv())
	t, err := w.rt.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: text, Busy: spine.Append})
	if err != nil {
		return fmt.Errorf("simulate: owner turn: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, w.o.StepTimeout)
	defer cancel()
	res, err := t.Wait(wctx)
	if err != nil {
		return fmt.Errorf("%w: owner turn %q: %w", ErrStep, text, err)
	}
	if res.Err != nil {
		w.o.Logger.Warn("simulate: owner turn failed", "err", res.Err)
	}
	return nil
}

// react tells the agent the owner's verdict; the stub model turns it into
// a nudge_feedback call, so the tracker, the policy and the preference
// learner hear it the way they do in production.
func (w *world) react(ctx context.Context, r reaction) error {
	if r.verdict == ReactIgnore {
		return nil
	}
	v, say := "accepted", "Good idea, thanks."
	if r.verdict == ReactDismiss {
		v, say = "dismissed", "Not now, please."
	}
	if w.surface == "" {
		w.attachUntil = w.clk.Now().Add(messageAttach)
		if err := w.setAttached(ctx, "cli"); err != nil {
			return err
		}
	}
	if err := w.turn(ctx, fmt.Sprintf("%s [verdict %s on %s]", say, v, r.nudgeID)); err != nil {
		return err
	}
	if b, err := os.ReadFile(w.paths.SentinelPaths().Preferences); err == nil && string(b) != w.lastPrefs {
		w.lastPrefs = string(b)
		var compact strings.Builder
		if json.Valid(b) {
			var v any
			_ = json.Unmarshal(b, &v)
			c, _ := json.Marshal(v)
			compact.Write(c)
		}
		w.learned(w.clk.Now(), "preferences.json "+compact.String())
	}
	return nil
}

func (w *world) learned(at time.Time, what string) {
	w.rep.Learned.Changes = append(w.rep.Learned.Changes, LearnedChange{At: stamp(at, w.tl.zone(at)), What: what})
}

// handleSeen turns what reached the owner's surface into reactions and
// outbox figures.
func (w *world) handleSeen(now time.Time, after time.Duration) {
	w.mu.Lock()
	seen := w.seen
	w.seen = nil
	w.mu.Unlock()
	for _, s := range seen {
		m := s.m
		if q, ok := m.Extras[outbox.ExtraQueuedAt].(time.Time); ok {
			wait := s.at.Sub(q)
			w.rep.Outbox.Shown++
			w.rep.Outbox.totalWait += wait
			w.rep.Outbox.MaxWaitMinutes = max(w.rep.Outbox.MaxWaitMinutes, wait.Minutes())
		}
		if m.Origin == spine.OriginCron && w.quiet(s.at) {
			w.rep.Quiet.CronDeliveries++
		}
		id, _ := m.Extras[executor.ExtraNudgeID].(string)
		if id == "" {
			// The policy mints a nudge's id after its delivery succeeded,
			// so a message shown during its tick is found by its content.
			id = w.nudgeByContent[m.Content]
		}
		if id == "" || m.Origin != spine.OriginSentinel {
			continue
		}
		w.shownIDs[id]++
		if w.shownIDs[id] > 1 {
			w.rep.DuplicateDeliveries++
			continue
		}
		topic := ""
		if rec, ok, _ := w.rt.Sentinel().Feedback.Lookup(id); ok {
			topic = rec.Topic
		}
		verdict := w.owner.react(s.at, topic, m.Content)
		w.rep.Owner.Seen++
		day := w.day(s.at)
		switch verdict {
		case ReactAccept:
			w.rep.Owner.Accepted++
			day.Accepted++
		case ReactDismiss:
			w.rep.Owner.Dismissed++
			day.Dismissed++
		default:
			w.rep.Owner.Ignored++
			day.Ignored++
		}
		w.reactions = append(w.reactions, reaction{at: s.at.Add(after), nudgeID: id, verdict: verdict})
	}
	sort.SliceStable(w.reactions, func(i, j int) bool { return w.reactions[i].at.Before(w.reactions[j].at) })
}

func (w *world) quiet(t time.Time) bool {
	return w.cfg.Sentinel.Policy.QuietHours.Contains(t.In(w.tl.zone(t)))
}

func (w *world) day(t time.Time) *DayStats {
	key := t.In(w.tl.zone(t)).Format(time.DateOnly)
	d := w.days[key]
	if d == nil {
		d = &DayStats{Date: key}
		w.days[key] = d
	}
	return d
}

// tick runs one Sentinel tick and records what it did and cost.
func (w *world) tick(ctx context.Context, now time.Time) {
	sys := w.rt.Sentinel()
	// Every call the tick makes counts (the planner's, and task
	// discovery's, which runs inside the tick).
	before := w.meter.total()
	plannerBefore := w.meter.Calls(OriginSentinel)
	failedBefore := w.meter.ByOrigin()[OriginSentinel].Errors
	slots := w.planSlots(now)
	highDue := false
	for _, s := range slots {
		if s.Priority == sentinel.PriorityHigh && s.Due(now) {
			highDue = true
		}
	}
	w.observeInputs(ctx, now)
	out := sys.Runner.TickOnce(ctx)
	calls := w.meter.total() - before
	rep := w.rep
	day := w.day(now)
	day.ModelCalls += calls
	rep.Ticks.Total++
	plannerCalls := w.meter.Calls(OriginSentinel) - plannerBefore
	rep.Ticks.PlannerCalls += plannerCalls
	rep.Ticks.ByRoute[out.Route]++
	if w.quiet(now) && !highDue {
		rep.Ticks.Quiet++
		rep.Ticks.QuietModelCalls += calls
	}
	if out.Route == sentinel.RouteFastPathDedup {
		rep.Ticks.Unchanged++
		// The planner's: the day's one discovery run may share the tick.
		rep.Ticks.UnchangedModelCalls += plannerCalls
	}
	if failed := w.meter.ByOrigin()[OriginSentinel].Errors - failedBefore; failed > 0 {
		for i, win := range w.outages {
			if !now.Before(win[0]) && now.Before(win[1]) {
				rep.Outages[i].FailedCalls += failed
				if out.Route == sentinel.RouteDeadlineFallback && out.Delivered() {
					rep.Outages[i].FallbackFires++
				}
			}
		}
	}
	w.record(out.Decision, out.Result, out.Route, now)
	w.noteFired(ctx, now, out)
	w.noteMultiplier(now)
}

// record counts one decision's way through the policy.
func (w *world) record(d sentinel.PlannerDecision, res *executor.Result, route string, now time.Time) {
	if d.Action == sentinel.ActionSkip || !d.Action.Valid() {
		return
	}
	rep := w.rep
	day := w.day(now)
	rep.Nudges.Proposed++
	day.Proposed++
	if res == nil {
		return
	}
	switch {
	case res.Delivered:
		if res.NudgeID != "" {
			w.nudgeByContent[d.NudgeMessage] = res.NudgeID
		}
		rep.Nudges.Delivered++
		day.Delivered++
		rep.Nudges.MaxDeliveredPerDay = max(rep.Nudges.MaxDeliveredPerDay, day.Delivered)
		if w.quiet(now) {
			rep.Quiet.Deliveries++
			if d.Priority != sentinel.PriorityHigh {
				rep.Quiet.NonHighDeliveries++
			}
		}
		topic := d.Topic
		if topic == "" {
			topic = policy.DeriveTopic(d.NudgeMessage)
		}
		for _, key := range []string{d.SlotID, topic} {
			if s := rep.deadlineSlots[key]; s != nil {
				s.Deliveries++
				if s.Deliveries == 1 {
					s.Delivered, s.At, s.Route = true, stamp(now, w.tl.zone(now)), route
				} else {
					rep.Deadlines.Duplicates++
					rep.DuplicateDeliveries++
				}
				break
			}
		}
	case res.Queued:
		rep.Nudges.Queued++
	case !res.Verdict.Allow && res.Verdict.Layer != "":
		rep.Nudges.Denied++
		day.Denied++
		rep.Nudges.DeniedByLayer[res.Verdict.Layer]++
	}
}

// planSlots are now's day plan; deadline slots are remembered for the
// hit/miss figures.
func (w *world) planSlots(now time.Time) []sentinel.PlanSlot {
	plan := w.rt.Sentinel().Plan
	if plan == nil {
		return nil
	}
	slots := plan.Slots(now)
	for _, s := range slots {
		if !s.Deadline {
			continue
		}
		if _, ok := w.rep.deadlineSlots[s.ID]; ok {
			continue
		}
		loc := w.tl.zone(now)
		sl := &Slot{ID: s.ID, Message: s.Message, Priority: string(s.Priority), end: s.End,
			Window: s.Start.In(loc).Format("Mon 01-02 15:04") + "–" + s.End.In(loc).Format("15:04")}
		w.rep.deadlineSlots[s.ID] = sl
		w.rep.Deadlines.Slots = append(w.rep.Deadlines.Slots, sl)
	}
	return slots
}

// noteFired reads the runner's fired-slot record: a slot the planner
// covered with a nudge on its topic counts as delivered too.
func (w *world) noteFired(ctx context.Context, now time.Time, out sentinel.TickOutcome) {
	var st struct {
		FiredSlots map[string]string `json:"fired_slots"`
	}
	if err := w.rt.Sentinel().Store.View(ctx, func(tx *statefile.Tx) error {
		_, err := tx.Get(sentinel.RunnerSection, &st)
		return err
	}); err != nil {
		return
	}
	for id := range st.FiredSlots {
		if s := w.rep.deadlineSlots[id]; s != nil && !s.Delivered {
			s.Delivered, s.At, s.Route = true, stamp(now, w.tl.zone(now)), out.Route
			s.Deliveries = max(s.Deliveries, 1)
		}
	}
}

func (w *world) noteMultiplier(now time.Time) {
	snap := w.rt.Sentinel().Policy.SnapshotState()
	if dnd := fmt.Sprint(snap.LearnedDNDHours); dnd != w.lastDND {
		w.lastDND = dnd
		w.learned(now, "learned do-not-disturb hours "+dnd)
	}
	m := snap.Multiplier
	a := &w.rep.Adaptive
	if m != w.lastMult {
		a.Changes = append(a.Changes, Change{At: stamp(now, w.tl.zone(now)), From: w.lastMult, To: m})
		w.lastMult = m
	}
	a.Min, a.Max, a.End = min(a.Min, m), max(a.Max, m), m
	w.day(now).Multiplier = m
}

func (w *world) pollDefer(ctx context.Context, now time.Time) {
	for _, r := range w.rt.Sentinel().Defer.Poll(ctx) {
		if !r.Delivered {
			continue
		}
		if rec, ok, _ := w.rt.Sentinel().Feedback.Lookup(r.NudgeID); ok && r.NudgeID != "" {
			w.nudgeByContent[rec.Content] = r.NudgeID
		}
		w.rep.Nudges.Delivered++
		day := w.day(now)
		day.Delivered++
		w.rep.Nudges.MaxDeliveredPerDay = max(w.rep.Nudges.MaxDeliveredPerDay, day.Delivered)
		if w.quiet(now) {
			// A poll result does not carry the priority: counted as not high.
			w.rep.Quiet.Deliveries++
			w.rep.Quiet.NonHighDeliveries++
		}
	}
}

// travel restarts the runtime in the owner's new zone, as their gateway
// restarts after they change it; the data dir (ledger, feedback, outbox,
// jobs) carries over.
func (w *world) travel(ctx context.Context) error {
	surface := w.surface
	if err := w.closeRuntime(); err != nil {
		return err
	}
	w.surface = ""
	w.cfg.Sentinel.Policy.Location = w.tl.zone(w.clk.Now())
	if err := w.buildRuntime(ctx); err != nil {
		return err
	}
	w.rt.Cron().Poke()
	return w.setAttached(ctx, surface)
}

// observeInputs records, once a local day at the first tick from 09:00,
// what the planner's context holds from the calendar, the daily analysis
// and the routine store.
func (w *world) observeInputs(ctx context.Context, now time.Time) {
	local := now.In(w.tl.zone(now))
	day := local.Format(time.DateOnly)
	if local.Hour() < 9 || w.inputsSeen[day] {
		return
	}
	w.inputsSeen[day] = true
	sys := w.rt.Sentinel()
	pc := sys.Assembler.Assemble(ctx)
	in := &w.rep.Inputs
	in.CalendarEvents += len(pc.Calendar)
	if len(pc.Calendar) > 0 {
		in.CalendarDays++
	}
	if sys.Analysis != nil && strings.Contains(pc.AttentionMD, "## "+sentinel.SectionThemes) {
		in.AnalysisDays++
	}
	for _, r := range pc.Routines {
		if !slices.Contains(in.Routines, r.Description) {
			in.Routines = append(in.Routines, r.Description)
		}
	}
}

func (w *world) finish(ctx context.Context) error {
	rep := w.rep
	w.clk.Set(w.end)
	rep.Inputs.AnalysisCalls = w.meter.Calls(llm.OriginAnalysis)
	rep.Deadlines.Expected = len(w.sc.Deadlines)
	for _, d := range w.sc.Deadlines {
		if !w.planned(d) {
			rep.Deadlines.Unplanned = append(rep.Deadlines.Unplanned, d.written())
		}
	}
	for _, s := range rep.Deadlines.Slots {
		if s.Priority == string(sentinel.PriorityHigh) {
			if s.end.After(w.end) {
				continue
			}
			rep.Deadlines.HighSlots++
			if s.Delivered {
				rep.Deadlines.HighDelivered++
			} else {
				rep.Deadlines.HighMissed++
			}
			continue
		}
		rep.Deadlines.OtherSlots++
		if s.Delivered {
			rep.Deadlines.OtherHit++
		}
	}
	if rep.Deadlines.HighSlots > 0 {
		rep.Deadlines.HighRate = float64(rep.Deadlines.HighDelivered) / float64(rep.Deadlines.HighSlots)
	}
	if rep.Owner.Seen > 0 {
		rep.Owner.AcceptanceRate = float64(rep.Owner.Accepted) / float64(rep.Owner.Seen)
	}
	if rep.Outbox.Shown > 0 {
		rep.Outbox.AvgWaitMinutes = rep.Outbox.totalWait.Minutes() / float64(rep.Outbox.Shown)
	}
	if n, err := w.rt.Outbox().Count(ctx); err == nil {
		rep.Outbox.LeftAtEnd = n
	}
	sys := w.rt.Sentinel()
	snap := sys.Policy.SnapshotState()
	rep.Learned.DNDHours = snap.LearnedDNDHours
	if rep.Learned.DNDHours == nil {
		rep.Learned.DNDHours = []int{}
	}
	if b, err := os.ReadFile(w.paths.SentinelPaths().Preferences); err == nil && json.Valid(b) {
		rep.Learned.Preferences = json.RawMessage(b)
	}
	rep.Adaptive.AcceptanceRate, rep.Adaptive.FeedbackSamples = sys.Feedback.AcceptanceRate(w.cfg.Sentinel.FeedbackWindow.D())
	if jobs, err := w.rt.CronStore().Jobs(ctx); err == nil {
		for _, j := range jobs {
			if !j.Enabled && j.DisabledReason != "" {
				rep.Cron.Decayed++
			}
		}
	}
	rep.Model.ByOrigin = w.meter.ByOrigin()
	for _, u := range rep.Model.ByOrigin {
		rep.Model.Calls += u.Calls
		rep.Model.InputTokens += u.InputTokens
		rep.Model.OutputTokens += u.OutputTokens
	}
	keys := make([]string, 0, len(w.days))
	for k := range w.days {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rep.PerDay = append(rep.PerDay, *w.days[k])
	}
	return nil
}

func stamp(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2006-01-02 15:04 MST")
}
