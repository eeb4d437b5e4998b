package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

func plannerReq(prompt string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}, Tools: []llm.Tool{{Name: sentinel.PlannerToolName}}}
}

func args(t *testing.T, r *llm.Response) map[string]any {
	t.Helper()
	if len(r.ToolCalls) != 1 {
		t.Fatalf("want one tool call, got %+v", r)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.ToolCalls[0].Arguments), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The meter counts each call under the origin of the turn, or of the tool
// the call is for when it runs outside a turn.
func TestMeterOrigins(t *testing.T) {
	turn := func(o spine.Origin) context.Context {
		return tools.WithTurn(context.Background(), tools.TurnInfo{Origin: o})
	}
	cases := []struct {
		name string
		ctx  context.Context
		req  llm.Request
		want string
	}{
		{"planner", context.Background(), plannerReq("x"), OriginSentinel},
		{"heartbeat decision", context.Background(), llm.Request{Tools: []llm.Tool{{Name: heartbeat.DecisionTool}}}, OriginHeartbeat},
		{"discovery", context.Background(), llm.Request{Tools: []llm.Tool{{Name: "propose_tasks"}}, ToolChoice: "propose_tasks"}, OriginDiscovery},
		{"user turn", turn(spine.OriginUser), llm.Request{}, "user"},
		{"cron turn", turn(spine.OriginCron), llm.Request{}, "cron"},
		{"unknown", context.Background(), llm.Request{}, OriginOther},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMeter()
			p := metered{inner: skipper{}, count: m}
			if _, err := p.Chat(c.ctx, c.req); err != nil {
				t.Fatal(err)
			}
			if got := m.ByOrigin(); got[c.want].Calls != 1 || len(got) != 1 {
				t.Fatalf("counted %v, want one %s call", got, c.want)
			}
		})
	}
	m := NewMeter()
	fail := metered{inner: outage{inner: skipper{}, clk: clock.NewFake(time.Unix(0, 0)), windows: [][2]time.Time{{time.Unix(0, 0), time.Unix(60, 0)}}}, count: m}
	_, err := fail.Chat(context.Background(), plannerReq("x"))
	var api *llm.APIError
	if !errors.As(err, &api) || api.StatusCode != 503 || m.ByOrigin()[OriginSentinel].Errors != 1 {
		t.Fatalf("outage: err %v, counted %v", err, m.ByOrigin())
	}
}

// The every-tick stub names a due deadline slot when the prompt offers
// one, and otherwise proposes a fresh nudge each time.
func TestEveryTickPlanner(t *testing.T) {
	p := &everyTick{}
	due := "# Planned deadline reminders due now (…)\n- [deadline-0304-abcd] Due today at 15:00: dentist (priority high, until 15:00)\n"
	a := args(t, must(p.Chat(context.Background(), plannerReq(due))))
	if a["slot_id"] != "deadline-0304-abcd" || a["priority"] != "high" || a["action"] != "nudge" {
		t.Fatalf("deadline: %v", a)
	}
	first := args(t, must(p.Chat(context.Background(), plannerReq("nothing due"))))
	second := args(t, must(p.Chat(context.Background(), plannerReq("nothing due"))))
	if first["nudge_message"] == second["nudge_message"] || first["topic"] == second["topic"] || first["action"] != "nudge" {
		t.Fatalf("two nudges: %v / %v", first, second)
	}
	menu := must(p.Chat(context.Background(), llm.Request{Tools: []llm.Tool{{Name: "propose_tasks"}}}))
	if menu.ToolCalls[0].Name != "propose_tasks" {
		t.Fatalf("discovery answered with %+v", menu)
	}
}

// The scripted planner answers each decision once, at its time.
func TestScriptedPlanner(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	p := newScripted(clk, []timedDecision{{at: clk.Now().Add(time.Hour), d: Decision{Action: "nudge", Message: "hello", Topic: "greeting"}}})
	if a := args(t, must(p.Chat(context.Background(), plannerReq("x")))); a["action"] != "skip" {
		t.Fatalf("before its time: %v", a)
	}
	clk.Advance(90 * time.Minute)
	if a := args(t, must(p.Chat(context.Background(), plannerReq("x")))); a["action"] != "nudge" || a["topic"] != "greeting" {
		t.Fatalf("at its time: %v", a)
	}
	if a := args(t, must(p.Chat(context.Background(), plannerReq("x")))); a["action"] != "skip" {
		t.Fatalf("used twice: %v", a)
	}
}

// The agent stub turns the owner's verdict into a nudge_feedback call.
func TestAgentStubReportsVerdicts(t *testing.T) {
	a := &agentStub{clk: clock.NewFake(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)), loc: func() *time.Location { return time.UTC }, hbDays: map[string]bool{}}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Not now. [verdict dismissed on n-123]"}}, Tools: []llm.Tool{{Name: "nudge_feedback"}}}
	got := args(t, must(a.Chat(context.Background(), req)))
	if got["verdict"] != "dismissed" || got["nudge_id"] != "n-123" {
		t.Fatalf("feedback call: %v", got)
	}
	hb := llm.Request{Tools: []llm.Tool{{Name: heartbeat.DecisionTool}}}
	if d := args(t, must(a.Chat(context.Background(), hb))); d["action"] != "run" {
		t.Fatalf("first heartbeat of the day: %v", d)
	}
	if d := args(t, must(a.Chat(context.Background(), hb))); d["action"] != "skip" {
		t.Fatalf("second heartbeat of the day: %v", d)
	}
}

func must(r *llm.Response, err error) *llm.Response {
	if err != nil {
		panic(err)
	}
	return r
}
