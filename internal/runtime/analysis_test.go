package runtime

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
)

// sentinel.analysis: one model call a day, shared by the Commitments and
// On their mind sections of attention.md, which the planner then reads —
// through the assembled runtime. Off by default: no call at all.
func TestDailyAnalysisFeedsAttention(t *testing.T) {
	reply := llm.Turn{ToolCalls: []llm.ToolCall{{ID: "a", Name: predictor.RecordAnalysisTool,
		Arguments: `{"commitments":[{"text":"send Sam the contract","due":"Friday"}],"themes":["the Lisbon trip"]}`}}}
	off := llm.NewScripted(nil)
	a, _ := newApp(t, false, off)
	a.Sentinel().Attention.Update(context.Background())
	if n := len(off.Requests()); n != 0 || a.Sentinel().Analysis != nil {
		t.Fatalf("analysis runs by default: %d calls", n)
	}

	prov := llm.NewScripted([]llm.Turn{reply})
	b, clk := newApp(t, false, prov, func(o *Options) { o.Config.Sentinel.Analysis.Enabled = true })
	ctx := context.Background()
	sys := b.Sentinel()
	sys.Attention.Update(ctx)
	clk.Advance(time.Hour)
	sys.Attention.Update(ctx)
	if n := len(prov.Requests()); n != 1 {
		t.Fatalf("%d model calls for two sections and two refreshes, want 1", n)
	}
	att, err := os.ReadFile(b.Paths().Attention())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Commitments\n- send Sam the contract (Friday)", "## On their mind\n- the Lisbon trip"} {
		if !strings.Contains(string(att), want) {
			t.Fatalf("attention.md lacks %q:\n%s", want, att)
		}
	}
	if pc := sys.Assembler.Assemble(ctx); !strings.Contains(pc.AttentionMD, "send Sam the contract") {
		t.Fatalf("the planner does not see the analysis:\n%s", pc.AttentionMD)
	}
}
