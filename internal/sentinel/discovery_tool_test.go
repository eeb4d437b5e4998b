package sentinel

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
)

type menuModel struct{ args string }

func (m menuModel) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{ToolCalls: []llm.ToolCall{{Name: "propose_tasks", Arguments: m.args}}}, nil
}
func (menuModel) Name() string { return "menu" }

// Discovery keeps the options the action executor can run — tool options
// (the seed's third path) included — and drops those it cannot.
func TestDiscoveryKeepsRunnableOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  string
		keep bool
	}{
		{"reply", `{"title":"T","kind":"reply","reply":"r"}`, true},
		{"spawn", `{"title":"T","kind":"spawn","task":"t"}`, true},
		{"tool with args", `{"title":"T","kind":"tool","tool":"read_file","args":{"path":"MEMORY.md"}}`, true},
		{"tool without args", `{"title":"T","kind":"tool","tool":"list_dir"}`, true},
		{"tool without a name", `{"title":"T","kind":"tool","args":{"path":"x"}}`, false},
		{"tool with non-object args", `{"title":"T","kind":"tool","tool":"read_file","args":["x"]}`, false},
		{"unknown kind", `{"title":"T","kind":"email"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newSysHarness(t, discoveryOn)
			h.clk.Set(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
			h.sys.Discoverer.Provider = menuModel{args: `{"options":[{"title":"Keep","kind":"reply","reply":"k"},` + tc.opt + `]}`}
			res := h.sys.Runner.RunDiscovery(context.Background())
			if !res.Delivered {
				t.Fatalf("menu not delivered: %+v", res)
			}
			pd, ok, err := h.sys.Pending.Active(context.Background(), "telegram:42")
			if err != nil || !ok {
				t.Fatalf("no active menu: %v", err)
			}
			if got := len(pd.Options) == 2; got != tc.keep {
				t.Fatalf("kept=%v, want %v: %+v", got, tc.keep, pd.Options)
			}
			if tc.keep && pd.Options[1].Kind == executor.KindTool && pd.Options[1].Tool == "" {
				t.Fatalf("tool option lost its tool: %+v", pd.Options[1])
			}
		})
	}
}
