package sentinel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

// fakeProvider answers every call with resp/err and records requests.
type fakeProvider struct {
	resp  *llm.Response
	err   error
	calls int
	reqs  []llm.Request
}

func (f *fakeProvider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.calls++
	f.reqs = append(f.reqs, req)
	return f.resp, f.err
}
func (f *fakeProvider) Name() string { return "fake/model" }

func toolResp(args string) *llm.Response {
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: PlannerToolName, Arguments: args}}}
}

func TestPlannerDecide(t *testing.T) {
	tests := []struct {
		name       string
		resp       *llm.Response
		err        error
		wantAction Action
		wantReason string // prefix
		wantPrio   Priority
		wantScore  float64
		provErr    bool
	}{
		{name: "provider error", err: errors.New("boom"), wantAction: ActionSkip, wantReason: ReasonProviderError, provErr: true},
		{name: "nil response", wantAction: ActionSkip, wantReason: ReasonProviderError, provErr: true},
		{name: "no tool call", resp: &llm.Response{Content: "I think you should nudge"}, wantAction: ActionSkip, wantReason: ReasonInvalid + ": no tool call"},
		{name: "other tool", resp: &llm.Response{ToolCalls: []llm.ToolCall{{Name: "exec", Arguments: "{}"}}}, wantAction: ActionSkip, wantReason: ReasonInvalid + ": no planner_decision"},
		{name: "garbage args", resp: toolResp(`{not json`), wantAction: ActionSkip, wantReason: ReasonInvalid + ": tool arguments are not a JSON object"},
		{name: "args array", resp: toolResp(`[1,2]`), wantAction: ActionSkip, wantReason: ReasonInvalid + ": tool arguments are not a JSON object"},
		{name: "args null", resp: toolResp(`null`), wantAction: ActionSkip, wantReason: ReasonInvalid + ": tool arguments are not a JSON object"},
		{name: "action wrong type", resp: toolResp(`{"action":3,"reason":"x","proactivity_score":0.5}`), wantAction: ActionSkip, wantReason: ReasonInvalid + ": action is float64"},
		{name: "unknown action", resp: toolResp(`{"action":"email","reason":"x","proactivity_score":0.5}`), wantAction: ActionSkip, wantReason: ReasonInvalid + `: unknown action "email"`},
		// The seed: a malformed priority or score lowers the decision (low, 0); it is not discarded.
		{name: "score wrong type kept at 0", resp: toolResp(`{"action":"nudge","reason":"x","proactivity_score":"high","nudge_message":"hi","priority":"medium"}`), wantAction: ActionNudge, wantReason: "x", wantPrio: PriorityMedium, wantScore: 0},
		{name: "score missing kept at 0", resp: toolResp(`{"action":"nudge","reason":"x","nudge_message":"hi","priority":"high"}`), wantAction: ActionNudge, wantReason: "x", wantPrio: PriorityHigh, wantScore: 0},
		{name: "priority wrong type kept at low", resp: toolResp(`{"action":"nudge","reason":"x","proactivity_score":0.7,"nudge_message":"hi","priority":3}`), wantAction: ActionNudge, wantReason: "x", wantPrio: PriorityLow, wantScore: 0.7},
		{name: "priority and score both malformed", resp: toolResp(`{"action":"nudge_inject","reason":"x","proactivity_score":null,"nudge_message":"hi","priority":["high"]}`), wantAction: ActionNudgeInject, wantReason: "x", wantPrio: PriorityLow, wantScore: 0},
		{name: "message wrong type", resp: toolResp(`{"action":"nudge","reason":"x","proactivity_score":0.5,"nudge_message":["a"]}`), wantAction: ActionSkip, wantReason: ReasonInvalid + ": nudge_message is []interface {}"},
		{name: "score clamped high", resp: toolResp(`{"action":"nudge","reason":"r","proactivity_score":7,"nudge_message":"hi","priority":"high"}`), wantAction: ActionNudge, wantReason: "r", wantPrio: PriorityHigh, wantScore: 1},
		{name: "score clamped low", resp: toolResp(`{"action":"skip","reason":"r","proactivity_score":-2}`), wantAction: ActionSkip, wantReason: "r", wantPrio: PriorityLow, wantScore: 0},
		{name: "invalid priority to low", resp: toolResp(`{"action":"nudge","reason":"r","proactivity_score":0.6,"nudge_message":"hi","priority":"urgent"}`), wantAction: ActionNudge, wantReason: "r", wantPrio: PriorityLow, wantScore: 0.6},
		{name: "guard nudge without message", resp: toolResp(`{"action":"nudge","reason":"r","proactivity_score":0.9}`), wantAction: ActionSkip, wantReason: ReasonGuard + ": nudge without nudge_message"},
		{name: "guard inject without message", resp: toolResp(`{"action":"nudge_inject","reason":"r","proactivity_score":0.9,"nudge_message":"  "}`), wantAction: ActionSkip, wantReason: ReasonGuard + ": nudge_inject without nudge_message"},
		{name: "guard defer without condition", resp: toolResp(`{"action":"nudge_defer","reason":"r","proactivity_score":0.9,"nudge_message":"hi"}`), wantAction: ActionSkip, wantReason: ReasonGuard + ": nudge_defer without defer_condition"},
		{name: "guard spawn without task", resp: toolResp(`{"action":"spawn_agent","reason":"r","proactivity_score":0.9}`), wantAction: ActionSkip, wantReason: ReasonGuard + ": spawn_agent without spawn_task"},
		{name: "valid defer", resp: toolResp(`{"action":"nudge_defer","reason":"r","proactivity_score":0.9,"nudge_message":"hi","defer_condition":"thread idle"}`), wantAction: ActionNudgeDefer, wantReason: "r", wantPrio: PriorityLow, wantScore: 0.9},
		{name: "valid spawn", resp: toolResp(`{"action":"spawn_agent","reason":"r","proactivity_score":0.5,"spawn_task":"digest","priority":"medium"}`), wantAction: ActionSpawnAgent, wantReason: "r", wantPrio: PriorityMedium, wantScore: 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := &fakeProvider{resp: tc.resp, err: tc.err}
			d := NewPlanner(fp, "m", nil).Decide(context.Background(), PlannerContext{Now: time.Unix(0, 0)})
			if d.Action != tc.wantAction {
				t.Fatalf("action = %q, want %q (reason %q)", d.Action, tc.wantAction, d.Reason)
			}
			if !strings.HasPrefix(d.Reason, tc.wantReason) {
				t.Errorf("reason = %q, want prefix %q", d.Reason, tc.wantReason)
			}
			if d.ProviderError != tc.provErr {
				t.Errorf("ProviderError = %v, want %v", d.ProviderError, tc.provErr)
			}
			if tc.wantPrio != "" && d.Priority != tc.wantPrio {
				t.Errorf("priority = %q, want %q", d.Priority, tc.wantPrio)
			}
			if d.ProactivityScore != tc.wantScore && tc.wantAction != ActionSkip {
				t.Errorf("score = %v, want %v", d.ProactivityScore, tc.wantScore)
			}
			if tc.wantScore == 0 && tc.name == "score clamped low" && d.ProactivityScore != 0 {
				t.Errorf("score = %v, want 0", d.ProactivityScore)
			}
			if fp.calls != 1 {
				t.Errorf("provider calls = %d, want 1", fp.calls)
			}
		})
	}
}

func TestPlannerPinsGenerationParams(t *testing.T) {
	fp := &fakeProvider{resp: toolResp(`{"action":"skip","reason":"quiet","proactivity_score":0.1}`)}
	NewPlanner(fp, "gpt-x", nil).Decide(context.Background(), PlannerContext{Now: time.Now(), MemoryMD: "owner likes tea"})
	req := fp.reqs[0]
	if req.MaxTokens != PlannerMaxTokens || req.Temperature == nil || *req.Temperature != PlannerTemperature || !req.NoReasoning {
		t.Fatalf("generation params not pinned: %+v", req)
	}
	if req.Model != "gpt-x" || len(req.Tools) != 1 || req.Tools[0].Name != PlannerToolName || req.ToolChoice != PlannerToolName {
		t.Fatalf("tool/model wrong: %+v", req)
	}
	req2 := req.Tools[0].Parameters["required"].([]any)
	if len(req2) != 3 {
		t.Fatalf("schema requires %v, want only action, reason, proactivity_score", req2)
	}
	if !strings.Contains(req.Messages[1].Content, "owner likes tea") {
		t.Fatalf("context not rendered into prompt")
	}
}

func TestPlannerNilProvider(t *testing.T) {
	d := NewPlanner(nil, "", nil).Decide(context.Background(), PlannerContext{})
	if d.Action != ActionSkip || !d.ProviderError {
		t.Fatalf("got %+v", d)
	}
}
