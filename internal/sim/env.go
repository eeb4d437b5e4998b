package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

// day0 is the demo's Monday. The owner's zone is UTC so the output is the
// same on every machine.
var day0 = time.Date(2026, time.March, 2, 0, 0, 0, 0, time.UTC)

// at returns day0 + days at hh:mm.
func at(days, hh, mm int) time.Time {
	return day0.AddDate(0, 0, days).Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
}

// env is one section's world: its own data dir, virtual clock and runtime.
type env struct {
	paths config.Paths
	cfg   config.Config
	clk   *clock.Fake
	log   *slog.Logger
	tl    *Timeline
	step  time.Duration

	deliveries chan spine.Message
	closers    []func(context.Context) error

	// While holding, deliveries are printed only at release, so a tick's
	// decision line comes before the message it caused.
	holdMu    sync.Mutex
	holding   bool
	held      []Event
	explained map[spine.Origin]bool
}

func (e *env) hold() {
	e.holdMu.Lock()
	defer e.holdMu.Unlock()
	e.holding = true
}

func (e *env) release() {
	e.holdMu.Lock()
	held := e.held
	e.held, e.holding = nil, false
	e.holdMu.Unlock()
	for _, ev := range held {
		e.tl.emit(ev)
	}
}

func newEnv(_ context.Context, root, name string, tl *Timeline, o Options) (*env, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := config.NewPaths(dir)
	if err != nil {
		return nil, err
	}
	// The real default config; only what the story must pin is changed.
	cfg := config.Default()
	// The owner's zone is UTC so the output is the same on every machine.
	cfg.Sentinel.Policy.Location = time.UTC
	// The owner switched the Sentinel on (it is off by default); the demo
	// drives its ticks itself, as `raven sentinel tick` does, so no loop runs.
	cfg.Sentinel.Enabled = true
	// The daily discovery menu has its own section; elsewhere it would take
	// the first scripted planner reply of the day.
	cfg.Sentinel.Discovery = name == discoverySection.name
	return &env{
		paths: p, cfg: cfg, clk: clock.NewFake(day0), log: o.Logger, tl: tl, step: o.StepTimeout,
		deliveries: make(chan spine.Message, 256),
	}, nil
}

// emit stamps e with the virtual clock and prints it.
func (e *env) emit(ev Event) {
	if ev.At.IsZero() {
		ev.At = e.clk.Now()
	}
	e.tl.emit(ev)
}

// build are the inputs of one runtime.Build in a section.
type build struct {
	// model answers the agent loop and the heartbeat; planner the Sentinel
	// (planner, discovery, menu classifier). Nil: none configured.
	model, planner llm.Provider
	services       runtime.Services
	// real are the real channels (telegram, webhook) whose outlets are the
	// owner's devices: registered before any service runs, as the gateway
	// registers its channels.
	real []string
	// outlets are extra outlets to register the same way.
	outlets map[string]spine.Outlet
	noModel bool
	// wrapCron observes each cron fire (the cron section prints them).
	wrapCron func(cron.Handler) cron.Handler
}

// newRuntime assembles Raven with runtime.Build — the one assembly every
// entry point uses — on this section's data dir and virtual clock.
func (e *env) newRuntime(ctx context.Context, b build) (*runtime.Runtime, error) {
	o := runtime.Options{
		Paths: e.paths, Config: e.cfg, Logger: e.log, Clock: e.clk,
		Provider: b.model, PlannerProvider: b.planner, NoModel: b.noModel,
		Services: b.services, WrapCronHandler: b.wrapCron,
		StartChannels: func(rt *runtime.Runtime) error {
			for _, ch := range b.real {
				rt.Hub().Register(ch, spine.OutletFunc(e.outlet))
			}
			for ch, out := range b.outlets {
				rt.Hub().Register(ch, out)
			}
			return nil
		},
	}
	rt, err := runtime.Build(ctx, o)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, rt.Close)
	return rt, nil
}

// screen is the owner's terminal or TUI window: an attached surface that
// prints what reaches it.
type screen struct{ e *env }

func (s screen) Deliver(ctx context.Context, m spine.Message) error { return s.e.outlet(ctx, m) }

// tuiScreen is a TUI window: it draws ask_user questions itself from the
// clarify.request payload, so they are not posted to it as text.
type tuiScreen struct {
	screen
	conv  string
	asked chan questions.ClarifyRequest
}

func (s tuiScreen) Ask(req questions.ClarifyRequest) {
	conv := s.conv
	payload, err := json.Marshal(req)
	if err != nil {
		payload = []byte(err.Error())
	}
	s.e.emit(Event{Kind: "clarify.request", Label: "broker", Text: "clarify.request → TUI clients of " + conv + "\n" + string(payload),
		Why:  "the turn is paused inside the tool; a TUI draws its prompt from this payload, chat channels get text instead",
		Data: map[string]any{"conversation": conv, "payload": req}})
	select {
	case s.asked <- req:
	default:
	}
}

// attach attaches the owner's screen to conv as the chat REPL or a TUI does
// (runtime.AttachOwner): the outbox is shown first. It returns the detach.
func (e *env) attach(ctx context.Context, rt *runtime.Runtime, conv string, s runtime.Surface) (func(), error) {
	if s == nil {
		s = screen{e}
	}
	detach, err := rt.AttachOwner(ctx, conv, s)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func(context.Context) error { detach(); return nil })
	return detach, nil
}

// outlet is the owner's screen: it prints every delivery and hands it to
// whoever waits for it.
func (e *env) outlet(_ context.Context, m spine.Message) error {
	ev := Event{Kind: "delivery", Label: "raven", Proactive: m.Proactive,
		Text: "→ " + m.Channel + ":" + m.ChatID + "  " + showMessage(m.Content),
		Data: map[string]any{"channel": m.Channel, "chat_id": m.ChatID, "origin": string(m.Origin), "reply": m.Reply, "content": m.Content}}
	if m.Reply {
		ev.Kind = "turn.reply"
	}
	for k, v := range m.Extras {
		ev.Data[k] = v
	}
	if m.Proactive {
		// Explain each kind of proactive message once; repeating it on
		// every delivery would bury the timeline.
		why := proactiveWhy(m)
		e.holdMu.Lock()
		if e.explained == nil {
			e.explained = map[spine.Origin]bool{}
		}
		if !e.explained[m.Origin] || m.Origin == spine.OriginSubagent {
			ev.Why = why
		}
		e.explained[m.Origin] = true
		e.holdMu.Unlock()
	}
	ev.At = e.clk.Now()
	e.holdMu.Lock()
	if e.holding {
		e.held = append(e.held, ev)
	} else {
		e.tl.emit(ev)
	}
	e.holdMu.Unlock()
	select {
	case e.deliveries <- m:
	default:
		return errors.New("sim: delivery buffer full")
	}
	return nil
}

func proactiveWhy(m spine.Message) string {
	switch m.Origin {
	case spine.OriginSubagent:
		if id, ok := m.Extras["subagent_id"]; ok {
			return fmt.Sprintf("background subagent %v finished; its result is posted back to the conversation that asked", id)
		}
		return "a background subagent finished"
	case spine.OriginSentinel:
		return "posted by the Sentinel through the hub, not as a reply; the CLI outlet marks it proactive so the owner can tell"
	case spine.OriginCron:
		return "a scheduled job fired"
	case spine.OriginHeartbeat:
		return "the heartbeat found an active task"
	}
	return ""
}

// showMessage keeps a message's line structure but drops blank lines.
func showMessage(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) <= 1 {
		return quote(s)
	}
	out[0] = "“" + out[0]
	out[len(out)-1] += "”"
	return strings.Join(out, "\n")
}

// expect waits (in real time, bounded) for a delivery matching ok.
func (e *env) expect(ctx context.Context, what string, ok func(spine.Message) bool) (spine.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, e.step)
	defer cancel()
	for {
		select {
		case m := <-e.deliveries:
			if ok(m) {
				return m, nil
			}
		case <-ctx.Done():
			return spine.Message{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// eventually retries check until it passes, for work the runtime finishes
// just after the event the story waited on (a record written after its
// delivery), bounded like every step.
func (e *env) eventually(ctx context.Context, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, e.step)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return err
		}
	}
}

// wait waits for a ticket in bounded real time.
func (e *env) wait(ctx context.Context, what string, t *spine.Ticket) (spine.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.step)
	defer cancel()
	res, err := t.Wait(ctx)
	if err != nil {
		return res, fmt.Errorf("waiting for %s: %w", what, err)
	}
	return res, nil
}

// say submits an owner message as a user turn and prints it.
func (e *env) say(rt *runtime.Runtime, channel, chatID, text string, busy spine.BusyPolicy) (*spine.Ticket, error) {
	e.emit(Event{Kind: "owner.message", Label: "owner", Text: "→ " + channel + ":" + chatID + "  " + quote(text),
		Data: map[string]any{"channel": channel, "chat_id": chatID, "content": text, "busy": busy.String()}})
	return rt.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: channel, ChatID: chatID, Content: text, Busy: busy})
}

// turn plays one owner message on cli:direct and returns the reply.
func (e *env) turn(ctx context.Context, rt *runtime.Runtime, text string) (string, error) {
	t, err := e.say(rt, "cli", "direct", text, spine.Append)
	if err != nil {
		return "", err
	}
	res, err := e.wait(ctx, "a reply", t)
	if err != nil {
		return "", err
	}
	if res.Err != nil {
		return "", res.Err
	}
	return res.Reply, nil
}

func (e *env) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), e.step)
	defer cancel()
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		if err := e.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// narrated wraps a scripted model so the timeline shows the agent loop from
// the model's side: each tool call it asks for, each tool result it is fed,
// and each injected owner message merged into its context. before, when
// set, runs before call n (1-based) is answered — a stage direction such as
// "the owner types while the model is thinking".
type narrated struct {
	inner  llm.Provider
	e      *env
	before func(n int, req llm.Request)
	// full names tools whose results are shown whole: for ask_user the
	// second line (what the owner chose, or that nobody answered) is the point.
	full map[string]bool
	// turns: the conversation keeps its history across turns, so a user
	// message after the model's last reply starts a turn (or is an
	// answer's continuation), not a mid-turn injection.
	turns bool

	mu sync.Mutex
	n  int
}

func (p *narrated) Name() string { return p.inner.Name() }

func (p *narrated) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	p.narrateInput(req)
	if p.before != nil {
		p.before(n, req)
	}
	resp, err := p.inner.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	for _, c := range resp.ToolCalls {
		p.e.emit(Event{Kind: "model.tool_call", Label: "model", Text: "calls " + c.Name + " " + callArgs(c),
			Data: map[string]any{"tool": c.Name, "arguments": c.Arguments}})
	}
	return resp, nil
}

// narrateInput reports what is new since the model last spoke: tool results
// and owner messages merged mid-turn.
func (p *narrated) narrateInput(req llm.Request) {
	last := -1
	for i, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			last = i
		}
	}
	if last < 0 {
		return
	}
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case llm.RoleTool:
			text := firstLine(m.Content)
			if p.full[m.Name] {
				text = strings.TrimSpace(m.Content)
			}
			p.e.emit(Event{Kind: "tool.result", Label: "tool", Text: m.Name + " → " + text,
				Data: map[string]any{"tool": m.Name, "result": m.Content}})
		case llm.RoleUser:
			if p.turns {
				p.e.emit(Event{Kind: "model.input", Label: "agent", Text: "turn input: " + quote(m.Content),
					Data: map[string]any{"content": m.Content}})
				continue
			}
			p.e.emit(Event{Kind: "turn.inject_merged", Label: "agent", Text: "merged into the running turn: " + quote(m.Content),
				Why:  "the turn drained its inject mailbox at the top of the next tool-loop iteration, so the model sees it before answering",
				Data: map[string]any{"content": m.Content}})
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 90 {
		s = string(r[:87]) + "…"
	}
	return s
}

// callArgs renders a tool call's arguments for the timeline.
func callArgs(c llm.ToolCall) string {
	if c.Name == "ask_user" {
		if s, ok := askUserArgs(c.Arguments); ok {
			return s
		}
	}
	return shortArgs(c.Arguments)
}

// shortArgs renders tool arguments as k=v pairs, long values shortened.
func shortArgs(raw string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return raw
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		v := fmt.Sprint(m[k])
		if s, ok := m[k].(string); ok {
			v = quote(s)
			if r := []rune(s); len(r) > 40 {
				v = quote(string(r[:37]) + "…")
			}
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// fmtDur prints 2m, 10m, 1h30m rather than Go's 2m0s.
func fmtDur(d time.Duration) string {
	s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
