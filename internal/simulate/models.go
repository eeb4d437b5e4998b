package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/tools"
)

// Origins a model call is counted under.
const (
	OriginSentinel  = "sentinel"
	OriginDiscovery = "discovery"
	OriginHeartbeat = "heartbeat"
	OriginOther     = "other"
)

// Usage is what one origin's model calls cost.
type Usage struct {
	Calls        int `json:"calls"`
	Errors       int `json:"errors"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Counter receives every model call. The Meter is the simulator's own; the
// usage accounting of internal/usage can stand in for it behind this one
// method.
type Counter interface {
	Add(origin string, u llm.Usage, err error)
}

// Meter counts model calls and tokens by origin.
type Meter struct {
	mu sync.Mutex
	by map[string]*Usage
}

// NewMeter returns an empty meter.
func NewMeter() *Meter { return &Meter{by: map[string]*Usage{}} }

// Add implements Counter.
func (m *Meter) Add(origin string, u llm.Usage, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.by[origin]
	if c == nil {
		c = &Usage{}
		m.by[origin] = c
	}
	c.Calls++
	if err != nil {
		c.Errors++
	}
	c.InputTokens += u.InputTokens
	c.OutputTokens += u.OutputTokens
}

// Calls is the number of calls counted under origin.
func (m *Meter) Calls(origin string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.by[origin]; c != nil {
		return c.Calls
	}
	return 0
}

func (m *Meter) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.by {
		n += c.Calls
	}
	return n
}

// ByOrigin is a copy of the counts.
func (m *Meter) ByOrigin() map[string]Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Usage, len(m.by))
	for k, v := range m.by {
		out[k] = *v
	}
	return out
}

// metered counts each call of inner under the origin of the turn making it
// (the agent's calls), or of the tool it asks for (the planner, discovery
// and heartbeat calls, which run outside a turn).
type metered struct {
	inner llm.Provider
	count Counter
}

func (p metered) Name() string { return p.inner.Name() }

func (p metered) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	resp, err := p.inner.Chat(ctx, req)
	var u llm.Usage
	if resp != nil {
		u = resp.Usage
	}
	p.count.Add(originOf(ctx, req), u, err)
	return resp, err
}

func originOf(ctx context.Context, req llm.Request) string {
	if t, ok := tools.TurnFrom(ctx); ok && t.Origin != "" {
		return string(t.Origin)
	}
	for _, t := range req.Tools {
		switch t.Name {
		case sentinel.PlannerToolName:
			return OriginSentinel
		case heartbeat.DecisionTool:
			return OriginHeartbeat
		}
	}
	if len(req.Tools) == 1 && req.ToolChoice == llm.ToolChoice(req.Tools[0].Name) {
		return OriginDiscovery
	}
	return OriginOther
}

// estimate is a stub's token count: about four characters a token.
func estimate(req llm.Request, out string) llm.Usage {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t.Parameters)
		n += len(t.Description) + len(b)
	}
	return llm.Usage{InputTokens: n/4 + 1, OutputTokens: len(out)/4 + 1}
}

func hasTool(req llm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func toolCall(req llm.Request, name string, args map[string]any) *llm.Response {
	b, _ := json.Marshal(args)
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "call-" + name, Name: name, Arguments: string(b)}}, FinishReason: "tool_calls",
		Usage: estimate(req, string(b))}
}

// noDiscovery answers a task-discovery call (any call not for the planner
// tool) with an empty menu: the stubs judge nudges, not menus.
func noDiscovery(req llm.Request) *llm.Response {
	if len(req.Tools) == 0 {
		return &llm.Response{Content: "nothing", Usage: estimate(req, "nothing")}
	}
	return toolCall(req, req.Tools[0].Name, map[string]any{"title": "", "options": []any{}})
}

// everyTick is the policy-testing planner: a nudge on every tick it is
// asked, on the first due deadline slot when one is offered, else on one
// of a rotation of topics — so the policy alone decides what gets through.
type everyTick struct {
	mu sync.Mutex
	n  int
}

var everyTickTopics = []string{"hydration", "posture", "inbox", "reading", "walk", "plants", "budget", "calls"}

// dueSlot is one "- [id] message (priority p, until hh:mm)" line of the
// planner prompt's due-deadline section.
var dueSlot = regexp.MustCompile(`(?m)^- \[([^\]]+)\] (.*) \(priority (low|medium|high), until [0-9:]+\)$`)

// deadlineNudge reminds of the first due deadline slot the planner prompt
// lists, naming its slot; nil when none is listed.
func deadlineNudge(req llm.Request) *llm.Response {
	m := dueSlot.FindStringSubmatch(lastUser(req))
	if m == nil {
		return nil
	}
	return toolCall(req, sentinel.PlannerToolName, map[string]any{
		"action": "nudge", "reason": "a planned deadline reminder is due", "priority": m[3], "proactivity_score": 0.9,
		"slot_id": m[1], "topic": m[1], "nudge_message": m[2],
	})
}

func (*everyTick) Name() string { return "simulate/" + PlannerNudgeEveryTick }

func (p *everyTick) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	if !hasTool(req, sentinel.PlannerToolName) {
		return noDiscovery(req), nil
	}
	if r := deadlineNudge(req); r != nil {
		return r, nil
	}
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	topic := everyTickTopics[n%len(everyTickTopics)]
	return toolCall(req, sentinel.PlannerToolName, map[string]any{
		"action": "nudge", "reason": "policy test: a nudge every tick", "priority": "low", "proactivity_score": 0.5,
		"topic": topic, "nudge_message": fmt.Sprintf("Nudge %d about %s: want a hand with it?", n, topic),
	}), nil
}

// skipper skips every tick.
type skipper struct{}

func (skipper) Name() string { return "simulate/" + PlannerSkip }

func (skipper) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	if !hasTool(req, sentinel.PlannerToolName) {
		return noDiscovery(req), nil
	}
	return toolCall(req, sentinel.PlannerToolName, map[string]any{"action": "skip", "reason": "nothing worth saying", "proactivity_score": 0.1}), nil
}

// scripted answers each listed decision once, at the first planner call at
// or after its time, and skips otherwise.
type scripted struct {
	clk clock.Clock
	mu  sync.Mutex
	due []timedDecision
}

type timedDecision struct {
	at time.Time
	d  Decision
}

func newScripted(clk clock.Clock, ds []timedDecision) *scripted {
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].at.Before(ds[j].at) })
	return &scripted{clk: clk, due: ds}
}

func (*scripted) Name() string { return "simulate/" + PlannerScripted }

func (p *scripted) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	if !hasTool(req, sentinel.PlannerToolName) {
		return noDiscovery(req), nil
	}
	now := p.clk.Now()
	p.mu.Lock()
	var d *Decision
	if len(p.due) > 0 && !p.due[0].at.After(now) {
		d = &p.due[0].d
		p.due = p.due[1:]
	}
	p.mu.Unlock()
	if d == nil {
		// What the planner prompt asks of a model: remind of a planned
		// deadline reminder listed as due now.
		if r := deadlineNudge(req); r != nil {
			return r, nil
		}
	}
	if d == nil || d.Action == "skip" {
		return toolCall(req, sentinel.PlannerToolName, map[string]any{"action": "skip", "reason": "scripted: nothing due", "proactivity_score": 0.1}), nil
	}
	args := map[string]any{"action": d.Action, "reason": "scripted", "proactivity_score": 0.8, "nudge_message": d.Message,
		"priority": cmpOr(d.Priority, "low")}
	if d.Topic != "" {
		args["topic"] = d.Topic
	}
	if d.Action == "nudge_defer" {
		args["defer_condition"] = "after the current thread settles"
	}
	return toolCall(req, sentinel.PlannerToolName, args), nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// outage fails every call inside the scenario's outage windows, as an
// endpoint answering 503 does.
type outage struct {
	inner   llm.Provider
	clk     clock.Clock
	windows [][2]time.Time
}

func (p outage) Name() string { return p.inner.Name() }

func (p outage) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	now := p.clk.Now()
	for _, w := range p.windows {
		if !now.Before(w[0]) && now.Before(w[1]) {
			return nil, &llm.APIError{Provider: p.inner.Name(), URL: "simulated", StatusCode: 503, Message: "planner outage (scenario)"}
		}
	}
	return p.inner.Chat(ctx, req)
}

// verdictMark is how the simulated owner's reply carries their verdict to
// the stub agent model, which turns it into a nudge_feedback call — the
// path a real model takes when the owner says "not now".
var verdictMark = regexp.MustCompile(`\[verdict (accepted|dismissed|neutral) on (\S+)\]`)

// agentStub is the agent's model: a short reply to the owner, a
// nudge_feedback call when the owner reacts to a nudge, and the heartbeat's
// decision (run the tasks once a day, from 09:00 local).
type agentStub struct {
	clk clock.Clock
	loc func() *time.Location

	mu     sync.Mutex
	hbDays map[string]bool
}

func (*agentStub) Name() string { return "simulate/agent" }

func (a *agentStub) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	if hasTool(req, heartbeat.DecisionTool) {
		local := a.clk.Now().In(a.loc())
		day := local.Format(time.DateOnly)
		a.mu.Lock()
		run := local.Hour() >= 9 && !a.hbDays[day]
		if run {
			a.hbDays[day] = true
		}
		a.mu.Unlock()
		if run {
			return toolCall(req, heartbeat.DecisionTool, map[string]any{"action": "run", "tasks": "Do today's HEARTBEAT.md tasks.", "reason": "daily tasks are due"}), nil
		}
		return toolCall(req, heartbeat.DecisionTool, map[string]any{"action": "skip", "reason": "done today or not yet time"}), nil
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleTool {
		return text(req, "Noted."), nil
	}
	last := lastUser(req)
	if m := verdictMark.FindStringSubmatch(last); m != nil && hasTool(req, feedback.ToolName) {
		return toolCall(req, feedback.ToolName, map[string]any{"verdict": m[1], "nudge_id": m[2], "reason": "the owner said so"}), nil
	}
	r := []rune(strings.TrimSpace(last))
	return text(req, "Sure — "+string(r[:min(len(r), 60)])), nil
}

func text(req llm.Request, s string) *llm.Response {
	return &llm.Response{Content: s, FinishReason: "stop", Usage: estimate(req, s)}
}

func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}
