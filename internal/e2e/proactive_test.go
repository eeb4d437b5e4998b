package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

func inject(msg string) fakeopenai.Reply {
	return Decision(map[string]any{"action": "nudge_inject", "reason": "the owner is chatting", "priority": "medium",
		"proactivity_score": 0.9, "nudge_message": msg, "target_session": "cli:direct"})
}

func nudge(msg string, extra map[string]any) map[string]any {
	d := map[string]any{"action": "nudge", "reason": "worth a heads-up", "priority": "medium", "proactivity_score": 0.9, "nudge_message": msg}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

type sentinelStatus struct {
	PendingInjects int        `json:"pending_injects"`
	LastTick       TickRecord `json:"last_tick"`
	Policy         struct {
		DayUsed  int `json:"day_used"`
		HourUsed int `json:"hour_used"`
	} `json:"policy"`
}

func (e *Env) sentinelStatus() sentinelStatus {
	e.T.Helper()
	var st sentinelStatus
	e.MustRun("sentinel", "status", "--json").JSON(e.T, &st)
	return st
}

// §2.2: the same inject proposed on three ticks is queued once, charged
// once, and rides the next reply as exactly one copy.
func TestInjectQueuedOnceRidesOneReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	const msg = "Don't forget the tax return is due Friday."
	e.PlanSequence(inject(msg))
	e.MustRun("chat", "-m", "hello")
	var ids []string
	for i := range 3 {
		rec := e.Tick()
		if rec.Action != "nudge_inject" || !rec.Queued || rec.Delivered {
			t.Fatalf("tick %d: %s", i+1, rec)
		}
		ids = append(ids, rec.NudgeID)
	}
	if ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("the same inject got nudge ids %q", ids)
	}
	if st := e.sentinelStatus(); st.PendingInjects != 1 || st.Policy.DayUsed != 1 {
		t.Fatalf("after three ticks: %d inject(s) queued, %d nudge(s) charged today; want 1 and 1", st.PendingInjects, st.Policy.DayUsed)
	}
	r := e.MustRun("chat", "-m", "what's next?")
	if n := strings.Count(r.Stdout, msg); n != 1 || !strings.Contains(r.Stdout, "fake reply to: what's next?") {
		t.Fatalf("reply carries %d copies of the inject, want 1:\n%s", n, r)
	}
	if st := e.sentinelStatus(); st.PendingInjects != 0 {
		t.Fatalf("%d inject(s) still queued after riding a reply", st.PendingInjects)
	}
	if r := e.MustRun("chat", "-m", "and then?"); strings.Contains(r.Stdout, msg) {
		t.Fatalf("the inject rode a second reply:\n%s", r)
	}
}

// §2.2: a queued inject is checked again when it would ride a reply: the
// owner's dismissal of an earlier nudge in between (dismissal cooldown)
// holds it back. Two nudges to one session inside the default 20-minute
// session cooldown is what the scenario needs, so that layer is off.
func TestInjectHeldBackByDismissalBeforeReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(map[string]any{"sentinel.policy.session_cooldown": "0s"}))
	const msg = "Your passport renewal form is still open."
	e.PlanSequence(Decision(nudge("Stretch your legs.", nil)), inject(msg))
	e.MustRun("chat", "-m", "hello")
	first := e.Tick()
	if !first.Delivered || first.NudgeID == "" {
		t.Fatalf("first nudge: %s", first)
	}
	if rec := e.Tick(); !rec.Queued || rec.NudgeID == "" {
		t.Fatalf("inject not queued: %s", rec)
	}
	e.MustRun("nudges", "feedback", first.NudgeID, "dismissed", "--reason", "not now")
	r := e.MustRun("chat", "-m", "what's next?")
	if strings.Contains(r.Stdout, msg) {
		t.Fatalf("inject rode the reply after a dismissal:\n%s", r)
	}
	if st := e.sentinelStatus(); st.PendingInjects != 1 {
		t.Fatalf("held-back inject: %d queued, want 1 (kept until its TTL)", st.PendingInjects)
	}
}

// §2.3: the session cooldown applies after the target is resolved: two
// untargeted nudges reach the same session, the second is denied, and the
// fire records the session it reached.
func TestSessionCooldownAfterTargetResolution(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanSequence(Decision(nudge("Stretch your legs.", nil)), Decision(nudge("Drink some water.", nil)))
	e.MustRun("chat", "-m", "hello")
	first := e.Tick()
	if !first.Delivered || first.NudgeID == "" {
		t.Fatalf("first untargeted nudge: %s", first)
	}
	second := e.Tick()
	if second.Allowed == nil || *second.Allowed || second.Layer != "session_cooldown" || second.Delivered {
		t.Fatalf("second untargeted nudge to the same session: %s", second)
	}
	ns := e.Nudges()
	if len(ns) != 1 || ns[0].NudgeID != first.NudgeID || ns[0].Session != "cli:direct" {
		t.Fatalf("nudges = %+v, want one fire recording session cli:direct", ns)
	}
	if st := e.sentinelStatus(); st.LastTick.Layer != "session_cooldown" || st.Policy.DayUsed != 1 {
		t.Fatalf("sentinel status: last tick %s, %d charged", st.LastTick, st.Policy.DayUsed)
	}
}

var slotRe = regexp.MustCompile(`\[(deadline-[^\]]+)\]`)

// §2.4: a high-priority deadline in MEMORY.md is offered to the planner as
// a slot; the planner delivers it naming slot_id; during a later model
// outage the deadline fallback does not send it again.
func TestDeadlineSlotNotResentByOutageFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	due := time.Now().In(midday.Loc).Add(90 * time.Minute)
	e.WriteFile("workspace/MEMORY.md", fmt.Sprintf("# Memory\n\n- %s submit the tax return\n", due.Format("2006-01-02 15:04")))
	var slot string
	e.Model.On(IsPlanner(), func(r fakeopenai.Request) fakeopenai.Reply {
		if slot != "" {
			return fakeopenai.Error(500, "model outage")
		}
		m := slotRe.FindStringSubmatch(r.LastUser())
		if m == nil {
			return Decision(map[string]any{"action": "skip", "reason": "no slot offered", "proactivity_score": 0})
		}
		slot = m[1]
		return Decision(nudge("The tax return is due at "+due.Format("15:04")+" — want me to pull the numbers together?",
			map[string]any{"priority": "high", "slot_id": slot}))
	})
	first := e.Tick()
	if !first.Delivered || first.Slot == "" || first.Slot != slot {
		t.Fatalf("planner's deadline nudge (slot %q): %s\n%s", slot, first, e.Model)
	}
	second := e.Tick()
	if second.Route == "deadline_fallback" || second.Delivered || !strings.Contains(second.Reason, "planner_error") {
		t.Fatalf("tick during the outage: %s", second)
	}
	if ns := e.Nudges(); len(ns) != 1 {
		t.Fatalf("%d deliveries of the deadline, want 1: %+v", len(ns), ns)
	}
}

// §2.11: a decision whose priority and score are malformed is kept,
// lowered to low / 0, and still goes through every policy layer.
func TestPlannerKeepsMalformedPriorityAndScore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanSequence(fakeopenai.Call(PlannerTool, `{"action":"nudge","reason":"r","priority":"URGENT!!","proactivity_score":"very","nudge_message":"The library book is due tomorrow."}`))
	e.MustRun("chat", "-m", "hello")
	rec := e.Tick()
	if rec.Action != "nudge" || rec.Priority != "low" || rec.Score != 0 || !rec.Delivered {
		t.Fatalf("malformed priority/score: %s priority=%q score=%v", rec, rec.Priority, rec.Score)
	}
	out := e.MustRun("sentinel", "explain", "--last", "1").Stdout
	if !strings.Contains(out, "nudge (low, score 0.00)") {
		t.Fatalf("sentinel explain:\n%s", out)
	}
}

// §2.11: the planner's request pins its generation settings. On an
// OpenAI-compatible server that is not api.openai.com, "no reasoning"
// sends no reasoning_effort (other servers reject it) even for a model
// name of OpenAI's reasoning family, and max_tokens instead of
// max_completion_tokens.
func TestPlannerRequestPinsNoReasoning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(map[string]any{"sentinel.planner_model": "openai/gpt-5.1"}))
	e.PlanSequence(Decision(map[string]any{"action": "skip", "reason": "quiet day", "proactivity_score": 0}))
	e.Tick()
	reqs := e.PlannerRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d planner requests\n%s", len(reqs), e.Model)
	}
	r := reqs[0]
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	_, effort := body["reasoning_effort"]
	_, mct := body["max_completion_tokens"]
	if r.Model != "gpt-5.1" || effort || mct || r.MaxTokens != 512 || r.Temperature == nil || *r.Temperature != 0.2 ||
		!strings.Contains(string(r.ToolChoice), PlannerTool) || len(r.Tools) != 1 {
		t.Fatalf("planner request: model %q reasoning_effort %v max_completion_tokens %v max_tokens %d temperature %v tool_choice %s tools %v",
			r.Model, effort, mct, r.MaxTokens, r.Temperature, r.ToolChoice, r.ToolNames())
	}
}

// §2.11: the planner's context cuts long owner messages on a character
// boundary: a message of two-byte letters after one ASCII byte reaches the
// model without a broken character (Go's encoder would send U+FFFD).
func TestPlannerContextCutsOnCharacterBoundary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanSequence(Decision(map[string]any{"action": "skip", "reason": "quiet", "proactivity_score": 0}))
	e.MustRun("chat", "-m", "x"+strings.Repeat("ё", 400))
	e.Tick()
	reqs := e.PlannerRequests()
	if len(reqs) != 1 {
		t.Fatalf("%s", e.Model)
	}
	ctx := reqs[0].LastUser()
	if !strings.Contains(ctx, "owner: xёё") || strings.ContainsRune(ctx, '\uFFFD') || !utf8.ValidString(ctx) {
		t.Fatalf("planner context around the owner's message:\n%s", ctx)
	}
}
