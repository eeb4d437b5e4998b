package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
)

// A deadline the owner types the way people do ("dentist Friday 15:00")
// reaches attention.md, the planner's context and the day's plan, resolved
// against when the owner wrote it — through the assembled runtime with the
// default config.
func TestInformalDeadlineReachesPlannerAndPlan(t *testing.T) {
	observe, settled := settledOn()
	// 2025-03-04 is a Tuesday: "Friday" is 2025-03-07.
	a, clk := newSentinelApp(t, false, []llm.Turn{{Content: "Noted."}}, observe)
	turn(t, a, "dentist Friday 15:00 needs confirming")
	<-settled
	ctx := context.Background()
	sys := a.Sentinel()
	items := sys.Deadlines(ctx)
	if len(items) != 1 || items[0].From != "Friday 15:00" || !items[0].At.Equal(time.Date(2025, 3, 7, 15, 0, 0, 0, time.UTC)) {
		t.Fatalf("deadlines = %+v", items)
	}
	if sys.Attention == nil {
		t.Fatal("attention is on by default")
	}
	sys.Attention.Update(ctx)
	pc := sys.Assembler.Assemble(ctx)
	if want := `2025-03-07 15:00 (in 3 days, history, from "Friday 15:00" written 2025-03-04): dentist Friday 15:00 needs confirming`; !strings.Contains(pc.AttentionMD, want) {
		t.Fatalf("planner context lacks %q:\n%s", want, pc.AttentionMD)
	}
	clk.Set(time.Date(2025, 3, 7, 8, 0, 0, 0, time.UTC))
	var due *sentinel.PlanSlot
	for _, s := range sys.Plan.Slots(clk.Now()) {
		if s.Deadline && strings.Contains(s.Message, "dentist") {
			due = &s
		}
	}
	if due == nil || !strings.Contains(due.Message, "15:00") {
		t.Fatalf("Friday's plan has no slot for the dentist: %+v", sys.Plan.Slots(clk.Now()))
	}
}

// A fact the remember tool wrote carries the day it was noted: its informal
// date resolves against that day, and the stamp itself is no deadline —
// through the assembled runtime's own tools.
func TestRememberedFactIsOneDeadline(t *testing.T) {
	a, _ := newSentinelApp(t, false, []llm.Turn{})
	ctx := context.Background()
	if _, err := a.Tools().Run(ctx, llm.ToolCall{ID: "r", Name: "remember", Arguments: `{"fact":"call the plumber tomorrow 9am"}`}); err != nil {
		t.Fatal(err)
	}
	items := a.Sentinel().Deadlines(ctx)
	if len(items) != 1 || items[0].From != "tomorrow 9am" || !items[0].At.Equal(time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("deadlines = %+v, want one, tomorrow 09:00", items)
	}
}
