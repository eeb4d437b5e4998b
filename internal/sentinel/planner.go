package sentinel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/raven-agent/raven/internal/llm"
)

// Pinned generation parameters: a decision is a short structured tool call,
// and no global provider setting (a long max-tokens, a creative
// temperature, a reasoning budget) may leak into it.
const (
	PlannerMaxTokens   = 512
	PlannerTemperature = 0.2
)

// Skip reason prefixes, so logs and `raven sentinel explain` can tell model
// outages from model misbehaviour from the consistency guard.
const (
	ReasonProviderError = "planner_error"
	ReasonInvalid       = "planner_invalid"
	ReasonGuard         = "consistency_guard"
)

// Decider turns a context into a decision. It never fails: every failure is
// a skip with the reason recorded.
type Decider interface {
	Decide(ctx context.Context, pc PlannerContext) PlannerDecision
}

// Planner is the LLM decision layer: a pure function of (context, provider,
// model) with no side effects.
type Planner struct {
	provider llm.Provider
	model    string
	log      *slog.Logger
}

// NewPlanner returns a planner calling provider with model. A nil provider
// makes every decision a skip (no model configured).
func NewPlanner(provider llm.Provider, model string, log *slog.Logger) *Planner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Planner{provider: provider, model: model, log: log}
}

// Request builds the provider request for pc. Exposed for tests and replay.
func (p *Planner) Request(pc PlannerContext) llm.Request {
	temp := PlannerTemperature
	return llm.Request{
		Model: p.model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SystemPrompt},
			{Role: llm.RoleUser, Content: RenderContext(pc)},
		},
		Tools:       []llm.Tool{PlannerTool()},
		ToolChoice:  llm.ToolChoice(PlannerToolName),
		MaxTokens:   PlannerMaxTokens,
		Temperature: &temp,
		NoReasoning: true,
	}
}

// Decide makes one provider call and returns a validated decision.
func (p *Planner) Decide(ctx context.Context, pc PlannerContext) PlannerDecision {
	if p.provider == nil {
		d := Skip(ReasonProviderError + ": " + llm.ErrNoModel.Error())
		d.ProviderError = true
		return d
	}
	resp, err := p.provider.Chat(llm.WithCallTag(ctx, llm.CallTag{Origin: "sentinel", Tick: true}), p.Request(pc))
	if err == nil && resp == nil {
		err = errors.New("provider returned no response")
	}
	if err != nil {
		p.log.Warn("sentinel planner: provider call failed", "provider", p.provider.Name(), "err", err)
		d := Skip(fmt.Sprintf("%s: %s: %v", ReasonProviderError, p.provider.Name(), err))
		d.ProviderError = true
		return d
	}
	d := ParseDecision(resp)
	if strings.HasPrefix(d.Reason, ReasonInvalid) || strings.HasPrefix(d.Reason, ReasonGuard) {
		p.log.Info("sentinel planner: decision degraded to skip", "reason", d.Reason)
	}
	return d
}

// ParseDecision validates a model response into a decision. Every problem
// becomes a skip whose reason says what was wrong.
func ParseDecision(resp *llm.Response) PlannerDecision {
	var call *llm.ToolCall
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].Name == PlannerToolName {
			call = &resp.ToolCalls[i]
			break
		}
	}
	if call == nil {
		if len(resp.ToolCalls) > 0 {
			return Skip(fmt.Sprintf("%s: no %s call (model called %q)", ReasonInvalid, PlannerToolName, resp.ToolCalls[0].Name))
		}
		return Skip(ReasonInvalid + ": no tool call")
	}
	raw := json.RawMessage(strings.TrimSpace(call.Arguments))
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		d := Skip(ReasonInvalid + ": tool arguments are not a JSON object")
		if json.Valid(raw) {
			d.Raw = raw
		}
		return d
	}
	fail := func(format string, a ...any) PlannerDecision {
		d := Skip(ReasonInvalid + ": " + fmt.Sprintf(format, a...))
		d.Raw = raw
		return d
	}
	str := func(key string) (string, bool) {
		v, ok := args[key]
		if !ok || v == nil {
			return "", true
		}
		s, ok := v.(string)
		return strings.TrimSpace(s), ok
	}

	d := PlannerDecision{Raw: raw}
	action, ok := str("action")
	if !ok {
		return fail("action is %T, want a string", args["action"])
	}
	d.Action = Action(action)
	if !d.Action.Valid() {
		return fail("unknown action %q", action)
	}
	for key, dst := range map[string]*string{
		"reason": &d.Reason, "target_session": &d.TargetSession, "nudge_message": &d.NudgeMessage,
		"spawn_task": &d.SpawnTask, "defer_condition": &d.DeferCondition, "topic": &d.Topic, "slot_id": &d.SlotID,
	} {
		s, ok := str(key)
		if !ok {
			return fail("%s is %T, want a string", key, args[key])
		}
		*dst = s
	}
	// A malformed priority or score lowers the decision instead of
	// discarding it: the action and its message are what matter, and a
	// low-priority, zero-confidence nudge still has to pass every policy
	// layer.
	if pr, ok := str("priority"); ok {
		d.Priority = Priority(strings.ToLower(pr))
	}
	if !d.Priority.Valid() {
		d.Priority = PriorityLow
	}
	if v, ok := args["proactivity_score"].(float64); ok && !math.IsNaN(v) {
		d.ProactivityScore = min(max(v, 0), 1)
	}
	return Guard(d)
}

// Guard enforces the fields the schema cannot require conditionally, so the
// executors never need defensive checks.
func Guard(d PlannerDecision) PlannerDecision {
	var missing string
	switch {
	case d.Action.IsNudge() && d.NudgeMessage == "":
		missing = string(d.Action) + " without nudge_message"
	case d.Action == ActionNudgeDefer && d.DeferCondition == "":
		missing = "nudge_defer without defer_condition"
	case d.Action == ActionSpawnAgent && d.SpawnTask == "":
		missing = "spawn_agent without spawn_task"
	}
	if missing == "" {
		return d
	}
	s := Skip(fmt.Sprintf("%s: %s (planner said: %s)", ReasonGuard, missing, d.Reason))
	s.Raw = d.Raw
	s.ProactivityScore = d.ProactivityScore
	return s
}
