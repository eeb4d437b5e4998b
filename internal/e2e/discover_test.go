package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/outbox"
)

const discoveryTool = "propose_tasks"

func menu() fakeopenai.Reply {
	return fakeopenai.Call(discoveryTool, map[string]any{
		"title": "A few things I could do today:",
		"options": []map[string]any{
			{"title": "Summarise this week's notes", "kind": "reply", "reply": "Here is your week: three meetings, one deadline."},
			{"title": "Check the build status", "kind": "spawn", "task": "Check whether the nightly build passed and report."},
		},
	})
}

type discoverResult struct {
	Via       string `json:"via"`
	TriggerID string `json:"trigger_id"`
	Result    *struct {
		Delivered bool   `json:"delivered"`
		NudgeID   string `json:"nudge_id"`
		Error     string `json:"error"`
	} `json:"result"`
}

// §2.8: `raven sentinel discover` without a gateway runs discovery in the
// process and offers the menu on this terminal, through the policy.
func TestSentinelDiscoverWithoutGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.Model.On(fakeopenai.Offers(discoveryTool), fakeopenai.Always(menu()))
	e.MustRun("chat", "-m", "hello")
	r := e.MustRun("sentinel", "discover", "--json")
	var res discoverResult
	r.JSON(t, &res)
	if res.Via != "local" || res.Result == nil || !res.Result.Delivered || res.Result.NudgeID == "" {
		t.Fatalf("discover without a gateway: %+v\n%s", res, r)
	}
	if !strings.Contains(r.Stderr, "Summarise this week's notes") || !strings.Contains(r.Stderr, "Check the build status") {
		t.Fatalf("the menu was not shown on the terminal:\n%s", r)
	}
	ns := e.Nudges()
	if len(ns) != 1 || ns[0].NudgeID != res.Result.NudgeID || ns[0].Session != "cli:direct" {
		t.Fatalf("nudges after discover: %+v", ns)
	}
	if text := e.MustRun("sentinel", "discover"); !strings.Contains(text.Stdout, "menu not delivered: denied by") {
		t.Fatalf("a second menu right away is not denied by the policy:\n%s", text)
	}
}

// §2.8: with a gateway running, `raven sentinel discover` hands the run to
// the gateway (which has the channels); with nobody attached the menu waits
// in the outbox.
func TestSentinelDiscoverThroughGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanSequence(Decision(map[string]any{"action": "skip", "reason": "quiet", "proactivity_score": 0}))
	g := e.StartGateway()
	ev := e.Subscribe()
	tickEvent(ev, 10*time.Second)
	before := len(e.Model.Requests())
	e.Model.On(fakeopenai.Offers(discoveryTool), fakeopenai.Always(menu()))
	var res discoverResult
	e.MustRun("sentinel", "discover", "--json").JSON(t, &res)
	if res.Via != "gateway" || res.TriggerID == "" || res.Result != nil {
		t.Fatalf("discover beside a gateway: %+v", res)
	}
	ev.WaitFor(10*time.Second, "outbox.queued for the menu", Kind("outbox.queued"))
	in := e.inbox()
	if in.Pending != 1 || in.Items[0].Origin != outbox.OriginSentinel || !strings.Contains(in.Items[0].Content, "Check the build status") {
		t.Fatalf("outbox after discover: %+v\n%s", in, g.Log())
	}
	var asked bool
	for _, r := range e.Model.Requests()[before:] {
		asked = asked || r.HasTool(discoveryTool)
	}
	if !asked {
		t.Fatalf("the gateway did not ask the model for a menu:\n%s", e.Model)
	}
	g.Stop()
}
