package heartbeat

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
)

// DecisionTool is the virtual tool phase one forces the model to call. The
// decision is read from its arguments only, never from free text, so no
// "nothing to do" token can ever reach the owner.
const DecisionTool = "heartbeat_decision"

// Action is phase one's verdict.
type Action string

const (
	ActionSkip Action = "skip"
	ActionRun  Action = "run"
)

// maxTasksLen bounds the tasks text handed to phase two.
const maxTasksLen = 8 << 10

// Decision is phase one's parsed answer.
type Decision struct {
	Action Action `json:"action"`
	Tasks  string `json:"tasks,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// decisionTool is the schema of DecisionTool.
func decisionTool() llm.Tool {
	return llm.Tool{
		Name:        DecisionTool,
		Description: "Report whether any task in HEARTBEAT.md needs doing now.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"action": map[string]any{
					"type":        "string",
					"enum":        []string{string(ActionSkip), string(ActionRun)},
					"description": "run if at least one task is due now; otherwise skip",
				},
				"tasks": map[string]any{
					"type":        "string",
					"description": "for run: what to do now, as instructions for the agent",
				},
				"reason": map[string]any{
					"type":        "string",
					"description": "one short sentence explaining the decision",
				},
			},
			"required":             []string{"action", "reason"},
			"additionalProperties": false,
		},
	}
}

const decisionSystemPrompt = `You are the heartbeat of Raven, a personal assistant. Every so often you read the owner's HEARTBEAT.md task list and decide whether any task needs doing right now.
Call the heartbeat_decision tool exactly once:
- action "run" with "tasks" saying concretely what to do now, only if a task is due at the current time;
- action "skip" otherwise (nothing due, already done, or unclear).
Never write a message for the owner here; a separate step does the work.`

// decisionRequest builds the phase-one model call.
func decisionRequest(model, content string, now time.Time, wakeReasons []string) llm.Request {
	var b strings.Builder
	fmt.Fprintf(&b, "Current time: %s (%s)\n", now.Format(time.RFC3339), now.Weekday())
	if len(wakeReasons) > 0 {
		fmt.Fprintf(&b, "Woken early because: %s\n", strings.Join(wakeReasons, "; "))
	}
	b.WriteString("\nHEARTBEAT.md:\n<<<\n")
	b.WriteString(content)
	b.WriteString("\n>>>\n")
	temp := 0.0
	return llm.Request{
		Model: model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: decisionSystemPrompt},
			{Role: llm.RoleUser, Content: b.String()},
		},
		Tools:       []llm.Tool{decisionTool()},
		ToolChoice:  "required",
		MaxTokens:   1024,
		Temperature: &temp,
		NoReasoning: true,
	}
}

// parseDecision reads the decision from the response's tool call. Anything
// unexpected becomes a skip whose Reason says why; the bool reports whether
// the decision came from a well-formed call.
func parseDecision(resp *llm.Response) (Decision, bool) {
	if resp == nil {
		return Decision{Action: ActionSkip, Reason: "malformed: empty response"}, false
	}
	var call *llm.ToolCall
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].Name == DecisionTool {
			call = &resp.ToolCalls[i]
			break
		}
	}
	if call == nil {
		return Decision{Action: ActionSkip, Reason: fmt.Sprintf("malformed: no %s call (%d other tool calls)", DecisionTool, len(resp.ToolCalls))}, false
	}
	var d Decision
	if err := json.Unmarshal([]byte(call.Arguments), &d); err != nil {
		return Decision{Action: ActionSkip, Reason: "malformed: arguments are not a JSON object: " + err.Error()}, false
	}
	d.Reason = clip(strings.TrimSpace(d.Reason), 500)
	d.Tasks = clip(strings.TrimSpace(d.Tasks), maxTasksLen)
	switch d.Action {
	case ActionSkip:
		d.Tasks = ""
		return d, true
	case ActionRun:
		if d.Tasks == "" {
			return Decision{Action: ActionSkip, Reason: "malformed: run without tasks"}, false
		}
		return d, true
	}
	return Decision{Action: ActionSkip, Reason: fmt.Sprintf("malformed: unknown action %q", clip(string(d.Action), 40))}, false
}

// clip cuts s to at most n bytes without leaving a broken UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
