package sentinel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
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
	// ToolNames lists the agent tools a menu may offer to run; nil or
	// empty: no tool options (each run asks again, so a tool registered
	// later is offered from then on).
	ToolNames func() []ToolInfo
	Logger    *slog.Logger
}

// ToolInfo is one agent tool the discoverer may propose to run.
type ToolInfo struct {
	Name        string
	Description string // the first line is shown to the discoverer
	// Parameters is the tool's JSON schema, whose property names the
	// discoverer is shown.
	Parameters map[string]any
	// Check validates proposed args exactly as the registry will when the
	// pick runs, so the owner is never offered a pick that cannot run;
	// nil: any object.
	Check func(args json.RawMessage) error
}

// ToolCatalog is the agent's tool registry as discovery sees it;
// *tools.Registry is one.
type ToolCatalog interface {
	Defs() []llm.Tool
	CheckArgs(name string, args json.RawMessage) error
	IsExternal(name string) bool
}

// ToolInfosFrom lists the registry's tools for the discoverer, leaving out
// the names in skip (tools that make no sense as a menu pick, such as
// ask_user) and every external (MCP) tool: a pick is no consent to side
// effects, and nothing says what a server's tool changes. Each one's args
// are checked by the registry's own validation.
func ToolInfosFrom(reg ToolCatalog, skip ...string) []ToolInfo {
	defs := reg.Defs()
	out := make([]ToolInfo, 0, len(defs))
	for _, d := range defs {
		if slices.Contains(skip, d.Name) || reg.IsExternal(d.Name) {
			continue
		}
		name := d.Name
		out = append(out, ToolInfo{Name: name, Description: d.Description, Parameters: d.Parameters,
			Check: func(args json.RawMessage) error { return reg.CheckArgs(name, args) }})
	}
	return out
}

// checkOption normalises o and says why it cannot be offered ("" when it
// can). A tool option must name an offered tool and carry a JSON object of
// arguments (absent or null: no arguments) its schema accepts.
func checkOption(o *executor.Option, offered []ToolInfo) string {
	switch o.Kind {
	case executor.KindReply, executor.KindSpawn:
		o.Tool, o.Args = "", nil
		return ""
	case executor.KindTool:
	default:
		return fmt.Sprintf("unknown kind %q", o.Kind)
	}
	o.Tool = strings.TrimSpace(o.Tool)
	i := slices.IndexFunc(offered, func(ti ToolInfo) bool { return ti.Name == o.Tool })
	if i < 0 {
		return fmt.Sprintf("unknown tool %q", o.Tool)
	}
	raw := bytes.TrimSpace(o.Args)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var args any
	if err := json.Unmarshal(raw, &args); err != nil {
		return fmt.Sprintf("args are not JSON: %v", err)
	}
	if _, ok := args.(map[string]any); !ok {
		return "args are not a JSON object"
	}
	if check := offered[i].Check; check != nil {
		if err := check(raw); err != nil {
			return fmt.Sprintf("args do not fit %s: %v", o.Tool, err)
		}
	}
	o.Args = json.RawMessage(raw)
	return ""
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
	var offered []ToolInfo
	if t.ToolNames != nil {
		offered = t.ToolNames()
	}
	temp := 0.3
	resp, err := t.Provider.Chat(llm.WithCallTag(ctx, llm.CallTag{Origin: llm.OriginDiscovery}), llm.Request{
		Model: t.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: discoverySystemPrompt(maxOpt, offered)},
			{Role: llm.RoleUser, Content: renderDiscoveryContext(pc)},
		},
		Tools:      []llm.Tool{discoveryToolDef(offered)},
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
		if o.Title == "" {
			continue
		}
		if reason := checkOption(&o, offered); reason != "" {
			log.Info("sentinel: discovery option dropped", "title", o.Title, "kind", o.Kind, "tool", o.Tool, "reason", reason)
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
