package sentinel

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

const discoveryTool = "propose_tasks"

// TaskDiscoverer proposes the daily menu of things Raven could do, with one
// model call, and posts it through the policy-gated dispatcher.
type TaskDiscoverer struct {
	Provider   llm.Provider
	Model      string
	Store      *executor.PendingDecisionStore
	Dispatcher *executor.NudgeDispatcher
	MaxOptions int // default 4
	Logger     *slog.Logger
}

// Discover builds and dispatches a menu. A model failure or an empty menu is
// a non-delivered result, never an error.
func (t *TaskDiscoverer) Discover(ctx context.Context, pc PlannerContext) executor.Result {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if t.Provider == nil || t.Store == nil || t.Dispatcher == nil {
		return executor.Result{Error: "task discovery needs a model, a pending-decision store and a dispatcher"}
	}
	maxOpt := t.MaxOptions
	if maxOpt <= 0 {
		maxOpt = 4
	}
	temp := 0.3
	resp, err := t.Provider.Chat(ctx, llm.Request{
		Model: t.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: fmt.Sprintf("You are Raven's task discoverer. From the owner's memory and recent history, propose at most %d concrete things Raven could do for them today. Each option is a reply (a short piece of information to send), a spawn (a self-contained background task) or a tool (one of Raven's own tools, e.g. read_file, named with its JSON arguments; the owner's pick runs it as is). Propose nothing rather than filler.", maxOpt)},
			{Role: llm.RoleUser, Content: RenderContext(pc)},
		},
		Tools: []llm.Tool{{Name: discoveryTool, Description: "Propose today's task menu.", Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"title": map[string]any{"type": "string"},
				"options": map[string]any{"type": "array", "items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"title": map[string]any{"type": "string"}, "reason": map[string]any{"type": "string"},
						"kind":  map[string]any{"type": "string", "enum": []any{"reply", "spawn", "tool"}},
						"reply": map[string]any{"type": "string"}, "task": map[string]any{"type": "string"},
						"tool": map[string]any{"type": "string", "description": "for kind tool: the tool's name"},
						"args": map[string]any{"type": "object", "description": "for kind tool: the tool's arguments"},
					},
					"required": []any{"title", "kind"},
				}},
			},
			"required": []any{"options"},
		}}},
		ToolChoice: discoveryTool, MaxTokens: 800, Temperature: &temp, NoReasoning: true,
	})
	if err != nil {
		return executor.Result{Error: fmt.Sprintf("task discovery: %v", err)}
	}
	var args struct {
		Title   string            `json:"title"`
		Options []executor.Option `json:"options"`
	}
	found := false
	for _, c := range resp.ToolCalls {
		if c.Name == discoveryTool && json.Unmarshal([]byte(c.Arguments), &args) == nil {
			found = true
			break
		}
	}
	if !found {
		return executor.Result{Error: "task discovery: no usable " + discoveryTool + " call"}
	}
	var opts []executor.Option
	for _, o := range args.Options {
		o.Title = strings.TrimSpace(o.Title)
		if o.Title == "" || !usableOption(&o) {
			continue
		}
		opts = append(opts, o)
		if len(opts) == maxOpt {
			break
		}
	}
	if len(opts) == 0 {
		return executor.Result{Note: "task discovery: nothing worth proposing"}
	}
	session := ""
	if len(pc.ActiveSessions) > 0 {
		session = pc.ActiveSessions[0].Key
	} else if ts := t.Dispatcher.Targets(""); len(ts) > 0 {
		session = ts[0].Key()
	}
	if session == "" {
		return executor.Result{Error: "task discovery: no session to offer the menu in"}
	}
	title := strings.TrimSpace(args.Title)
	if title == "" {
		title = "A few things I could do for you today:"
	}
	pd, err := t.Store.Put(ctx, executor.PendingDecision{Session: session, Title: title, Topic: "task-discovery", Priority: policy.PriorityLow, Options: opts})
	if err != nil {
		return executor.Result{Error: fmt.Sprintf("task discovery: %v", err)}
	}
	res := t.Dispatcher.DispatchOptions(ctx, pd)
	if !res.Delivered {
		// An undelivered menu must not capture the owner's next "2".
		if _, err := t.Store.Transition(ctx, pd.ID, executor.StateCancelled, 0); err != nil {
			log.Warn("sentinel: could not cancel undelivered menu", "id", pd.ID, "err", err)
		}
	}
	return res
}

// usableOption reports whether o is an option the action executor can
// run. A tool option needs a tool name and, when it has arguments, a JSON
// object of them; the tool registry validates them against the tool's
// schema when the owner picks it.
func usableOption(o *executor.Option) bool {
	switch o.Kind {
	case executor.KindReply, executor.KindSpawn:
		return true
	case executor.KindTool:
		o.Tool = strings.TrimSpace(o.Tool)
		if o.Tool == "" {
			return false
		}
		if len(o.Args) == 0 || string(o.Args) == "null" {
			o.Args = nil
			return true
		}
		var args map[string]any
		return json.Unmarshal(o.Args, &args) == nil
	}
	return false
}
