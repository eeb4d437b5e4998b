package e2e

import (
	"fmt"
	"sync"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// PlannerTool is the tool the Sentinel planner must call; a request
// offering it is a planner request.
const PlannerTool = "planner_decision"

// IsPlanner matches the Sentinel planner's requests.
func IsPlanner() fakeopenai.Matcher { return fakeopenai.Offers(PlannerTool) }

// Decision is a planner reply: one planner_decision call with args.
func Decision(args map[string]any) fakeopenai.Reply { return fakeopenai.Call(PlannerTool, args) }

// PlanAlways makes every planner request answer with args.
func (e *Env) PlanAlways(args map[string]any) {
	e.Model.On(IsPlanner(), fakeopenai.Always(Decision(args)))
}

// SentinelOptions are the Options of a Sentinel scenario: the Sentinel on
// (sentinel.enabled=true, the one key every such scenario needs), every
// command in zone z, plus cfg.
func (z Zone) SentinelOptions(cfg map[string]any) Options {
	all := map[string]any{"sentinel.enabled": true}
	for k, v := range cfg {
		all[k] = v
	}
	return Options{Config: all, Env: []string{"TZ=" + z.Path}}
}

// TickRecord is the JSON `raven sentinel tick --json` prints (a line of
// sentinel/ticks.jsonl), with the fields the tests read.
type TickRecord struct {
	Action        string   `json:"action"`
	Reason        string   `json:"reason"`
	Priority      string   `json:"priority"`
	Score         float64  `json:"score"`
	Route         string   `json:"route"`
	Message       string   `json:"message"`
	Target        string   `json:"target"`
	Slot          string   `json:"slot"`
	Allowed       *bool    `json:"allowed"`
	Layer         string   `json:"layer"`
	VerdictReason string   `json:"verdict_reason"`
	Delivered     bool     `json:"delivered"`
	Queued        bool     `json:"queued"`
	NudgeID       string   `json:"nudge_id"`
	Error         string   `json:"error"`
	Notes         []string `json:"notes"`
}

func (r TickRecord) String() string {
	allowed := "nil"
	if r.Allowed != nil {
		allowed = fmt.Sprint(*r.Allowed)
	}
	return fmt.Sprintf("%s (%s) route=%s allowed=%s layer=%s (%s) delivered=%t queued=%t nudge=%s err=%q notes=%q",
		r.Action, r.Reason, r.Route, allowed, r.Layer, r.VerdictReason, r.Delivered, r.Queued, r.NudgeID, r.Error, r.Notes)
}

// Tick runs `raven sentinel tick --json` and returns its record.
func (e *Env) Tick() TickRecord {
	e.T.Helper()
	var rec TickRecord
	e.MustRun("sentinel", "tick", "--json").JSON(e.T, &rec)
	return rec
}

// PlanSequence answers the i-th planner request with replies[i], and every
// later one with the last reply; other requests go to the other rules.
func (e *Env) PlanSequence(replies ...fakeopenai.Reply) {
	var mu sync.Mutex
	n := 0
	e.Model.On(IsPlanner(), func(fakeopenai.Request) fakeopenai.Reply {
		mu.Lock()
		defer mu.Unlock()
		r := replies[min(n, len(replies)-1)]
		n++
		return r
	})
}

// PlannerRequests are the planner requests the fake model received.
func (e *Env) PlannerRequests() []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range e.Model.Requests() {
		if r.HasTool(PlannerTool) {
			out = append(out, r)
		}
	}
	return out
}

// Nudge is one entry of `raven nudges --json`.
type Nudge struct {
	NudgeID string `json:"nudge_id"`
	Action  string `json:"action"`
	Session string `json:"session"`
	Topic   string `json:"topic"`
	Verdict string `json:"verdict"`
	Content string `json:"content"`
	Source  string `json:"source"`
}

// Nudges is `raven nudges --json`.
func (e *Env) Nudges() []Nudge {
	e.T.Helper()
	var ns []Nudge
	e.MustRun("nudges", "--json").JSON(e.T, &ns)
	return ns
}
