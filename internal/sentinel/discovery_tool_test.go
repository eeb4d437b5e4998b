package sentinel

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
)

// weatherTool is an agent tool with a schema, recording its calls.
type weatherTool struct {
	mu    sync.Mutex
	calls []string
}

func (w *weatherTool) Name() string { return "weather" }
func (w *weatherTool) Description() string {
	return "Today's forecast for a city.\nUses the met office."
}
func (w *weatherTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []any{"city"}, "additionalProperties": false}
}
func (w *weatherTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(args))
	if turn, ok := tools.TurnFrom(ctx); !ok || turn.Conversation != "telegram:42" {
		return "", errors.New("ran outside the owner's conversation")
	}
	return "Leeds: 14°C, dry all afternoon.", nil
}

// recordingProvider answers with a fixed response and keeps the requests.
type recordingProvider struct {
	mu   sync.Mutex
	resp *llm.Response
	reqs []llm.Request
}

func (p *recordingProvider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	if p.resp == nil {
		return nil, errors.New("no scripted response")
	}
	return p.resp, nil
}
func (p *recordingProvider) Name() string { return "recording" }

func (p *recordingProvider) n() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// §2.7: task discovery proposes a tool option from the agent's own tools;
// the owner's "2" runs it through the registry (wired as the gateway
// does), the tool's output is the reply the owner gets, and the pick never
// reaches the model. Unknown tools and non-object args are dropped before
// the owner sees them. Default policy, real agent loop, real scheduler.
func TestDiscoveryProposesToolPickRunsIt(t *testing.T) {
	dir := t.TempDir()
	paths := testPaths(filepath.Join(dir, "home"))
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	sessions, err := session.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var owner []string // what reached the owner's telegram chat
	hub := spine.NewHub(nil)
	hub.Register("telegram", spine.OutletFunc(func(_ context.Context, m spine.Message) error {
		mu.Lock()
		defer mu.Unlock()
		owner = append(owner, m.Content)
		return nil
	}))
	weather := &weatherTool{}
	registry := tools.NewRegistry(weather)
	agentModel := &recordingProvider{} // the agent loop's model: must not be called
	clk := clock.NewFake(sysT0)
	ag := agent.New(agent.Options{Provider: agentModel, Tools: registry, Sessions: sessions, Clock: clk,
		MemoryPath: filepath.Join(dir, "MEMORY.md"), HistoryPath: filepath.Join(dir, "HISTORY.md")})

	cfg := DefaultConfig()
	cfg.Discovery, cfg.DiscoveryHour = true, 23 // run by hand below
	cfg.Policy.Location = time.UTC              // else the shipped policy
	discoverer := &recordingProvider{resp: &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: `{"options":[
		{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."},
		{"title":"Check the Leeds weather","kind":"tool","tool":"weather","args":{"city":"Leeds"}},
		{"title":"Book the table","kind":"tool","tool":"book_restaurant","args":{"name":"Luigi's"}},
		{"title":"Weather as a list","kind":"tool","tool":"weather","args":["Leeds"]},
		{"title":"Weather without a city","kind":"tool","tool":"weather","args":{}}]}`}}}}
	sys, err := NewSystem(SystemOptions{
		Paths: paths, Config: cfg, Provider: discoverer, Model: "m", Post: hub.Post, HasOutlet: hub.Has,
		Sessions: func(_ context.Context, _ time.Time) ([]session.Summary, error) {
			return []session.Summary{{Conversation: "telegram:42", Channel: "telegram", ChatID: "42", LastActivity: sysT0.Add(-time.Minute)}}, nil
		},
		// The gateway's wiring: the agent's registry runs the pick.
		Tools: func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			return registry.Run(ctx, llm.ToolCall{Name: name, Arguments: string(args)})
		},
		ToolNames: func() []ToolInfo { return ToolInfosFrom(registry, "ask_user") },
		Clock:     clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	ag.AddInboundHook(sys.Consumer.Hook)

	if res := sys.Runner.RunDiscovery(ctx); !res.Delivered {
		t.Fatalf("menu not delivered: %+v", res)
	}
	req := discoverer.reqs[0]
	schema, _ := json.Marshal(req.Tools[0].Parameters)
	if !strings.Contains(string(schema), `"enum":["reply","spawn","tool"]`) || !strings.Contains(string(schema), `"enum":["weather"]`) ||
		!strings.Contains(string(schema), `"args":{`) {
		t.Fatalf("propose_tasks schema offers no tool option: %s", schema)
	}
	if sp := req.Messages[0].Content; !strings.Contains(sp, "- weather(city): Today's forecast for a city.\n") || strings.Contains(sp, "met office") {
		t.Fatalf("discoverer not told the tools in one line each: %q", sp)
	}
	if up := req.Messages[1].Content; !strings.HasSuffix(up, "calling propose_tasks once.\n") || strings.Contains(up, "planner_decision") {
		t.Fatalf("discoverer asked for the planner's tool: %q", up[max(0, len(up)-80):])
	}
	mu.Lock()
	menu := owner[0]
	mu.Unlock()
	if !strings.Contains(menu, "2. Check the Leeds weather (runs weather)") || strings.Contains(menu, "Book the table") ||
		strings.Contains(menu, "as a list") || strings.Contains(menu, "without a city") || strings.Contains(menu, "3.") {
		t.Fatalf("menu %q", menu)
	}

	clk.Advance(2 * time.Minute)
	sched := spine.NewScheduler(ag.RunTurn, hub, spine.Options{})
	t.Cleanup(func() { sched.Shutdown(context.Background()) })
	tk, err := sched.Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "telegram", ChatID: "42", Content: "2"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := tk.Wait(wctx)
	if err != nil || res.Err != nil || !res.Delivered || res.Reply != "Leeds: 14°C, dry all afternoon." {
		t.Fatalf("pick turn: %+v %v", res, err)
	}
	weather.mu.Lock()
	calls := slices.Clone(weather.calls)
	weather.mu.Unlock()
	if len(calls) != 1 || calls[0] != `{"city":"Leeds"}` {
		t.Fatalf("tool calls %q", calls)
	}
	if agentModel.n() != 0 {
		t.Fatalf("the pick reached the agent's model (%d calls)", agentModel.n())
	}
	mu.Lock()
	got := slices.Clone(owner)
	mu.Unlock()
	if len(got) != 2 || got[1] != "Leeds: 14°C, dry all afternoon." {
		t.Fatalf("owner saw %q", got)
	}
	if _, open, _ := sys.Pending.Active(ctx, "telegram:42"); open {
		t.Fatal("menu open after its tool ran")
	}
	recs, _ := sys.Feedback.Nudges(10)
	if len(recs) != 2 || recs[0].Action != policy.ActionTool || recs[0].NudgeID == "" {
		t.Fatalf("tool pick not tracked: %+v", recs)
	}
}

// Without tools (nil ToolNames or no ToolRunner) the schema and prompt do
// not mention tool options, and a proposed one is dropped.
func TestDiscoveryWithoutToolsDropsToolOptions(t *testing.T) {
	cases := []struct {
		name string
		opt  func(*SystemOptions)
	}{
		{"no ToolNames", func(o *SystemOptions) {
			o.Tools = func(context.Context, string, json.RawMessage) (string, error) { return "", nil }
		}},
		{"no runner", func(o *SystemOptions) {
			o.ToolNames = func() []ToolInfo { return []ToolInfo{{Name: "weather"}} }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newDefaultSys(t, menuOnLate, c.opt)
			prov := &recordingProvider{resp: &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: `{"options":[
				{"title":"Check the weather","kind":"tool","tool":"weather","args":{"city":"Leeds"}},
				{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."}]}`}}}}
			h.sys.Discoverer.Provider = prov
			if res := h.sys.Runner.RunDiscovery(context.Background()); !res.Delivered {
				t.Fatalf("%+v", res)
			}
			schema, _ := json.Marshal(prov.reqs[0].Tools[0].Parameters)
			if strings.Contains(string(schema), `"tool"`) || strings.Contains(prov.reqs[0].Messages[0].Content, "Tools:") {
				t.Fatalf("tool kind offered without tools: %s", schema)
			}
			if menu := h.posted[0].Content; strings.Contains(menu, "weather") || !strings.Contains(menu, "1. Draft the tax email") {
				t.Fatalf("menu %q", menu)
			}
		})
	}
}

func TestCheckOption(t *testing.T) {
	offered := append(ToolInfosFrom(tools.NewRegistry(&weatherTool{})), ToolInfo{Name: "now"}) // no check: any object
	cases := []struct {
		name     string
		in       executor.Option
		wantWhy  string // substring; "" = kept
		wantArgs string
	}{
		{"reply kept, stray tool fields cleared", executor.Option{Kind: "reply", Tool: "weather", Args: json.RawMessage(`{}`)}, "", ""},
		{"spawn kept", executor.Option{Kind: "spawn"}, "", ""},
		{"unknown kind", executor.Option{Kind: "email"}, `unknown kind "email"`, ""},
		{"unknown tool", executor.Option{Kind: "tool", Tool: "rm_rf"}, `unknown tool "rm_rf"`, ""},
		{"no tool", executor.Option{Kind: "tool"}, `unknown tool ""`, ""},
		{"tool name trimmed", executor.Option{Kind: "tool", Tool: " weather ", Args: json.RawMessage(`{"city":"Leeds"}`)}, "", `{"city":"Leeds"}`},
		{"args array", executor.Option{Kind: "tool", Tool: "now", Args: json.RawMessage(`[1]`)}, "not a JSON object", ""},
		{"args string", executor.Option{Kind: "tool", Tool: "now", Args: json.RawMessage(`"x"`)}, "not a JSON object", ""},
		{"args absent", executor.Option{Kind: "tool", Tool: "now"}, "", `{}`},
		{"args null", executor.Option{Kind: "tool", Tool: "now", Args: json.RawMessage(`null`)}, "", `{}`},
		{"args miss a required field", executor.Option{Kind: "tool", Tool: "weather", Args: json.RawMessage(`{}`)}, "do not fit weather", ""},
		{"args with an unknown field", executor.Option{Kind: "tool", Tool: "weather", Args: json.RawMessage(`{"city":"Leeds","x":1}`)}, "do not fit weather", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.in
			why := checkOption(&o, offered)
			if c.wantWhy == "" && why != "" || c.wantWhy != "" && !strings.Contains(why, c.wantWhy) {
				t.Fatalf("why = %q, want %q", why, c.wantWhy)
			}
			if why == "" && string(o.Args) != c.wantArgs {
				t.Fatalf("args = %s, want %s", o.Args, c.wantArgs)
			}
		})
	}
}
