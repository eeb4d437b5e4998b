package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/sandbox"
)

func TestMain(m *testing.M) {
	// The exec tool re-executes this binary as its sandbox supervisor.
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	goleak.VerifyTestMain(m)
}

// The whole demo must run, fast, and show each path's key line: a broken
// path fails the run or drops its line.
func TestDemoShowsEveryPath(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	events, err := Run(context.Background(), &buf, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, buf.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("demo took %s; it must stay under 10s", d)
	}
	out := buf.String()
	flat := norm(out)
	for _, want := range []struct{ section, text string }{
		{"foundation", "calls write_file"},
		{"foundation", "write_file → wrote"},
		{"foundation", "merged into the running turn"},
		{"foundation", "merged into turn 1, ran no turn of its own"},
		{"foundation", "Side-gate code for him: 4471"},
		{"foundation", "background subagent sa-"},
		{"sentinel", "planner → nudge: policy ok → delivered as nudge n-"},
		{"sentinel", "⚑ raven         → cli:direct “Morning! The plumber"},
		{"sentinel", "planner → nudge_inject: queued"},
		{"sentinel", "good running weather. By the way: the passport office"},
		{"sentinel", "planner → nudge_defer: queued"},
		{"sentinel", "keep waiting"},
		{"sentinel", "thread settled → dispatching deferred nudge n-"},
		{"sentinel", "planner → spawn_agent"},
		{"sentinel", "Friday trains to Leeds"},
		{"sentinel", "quiet hours → skip on the fast path, the planner is not called"},
		{"sentinel", "charged when queued: 1 → 2 of today's 6 nudges"},
		{"sentinel", "already queued as inj-"},
		{"sentinel", "appended the queued nudge to that reply: one copy, one message"},
		{"sentinel", "in cli:direct's session, tracked for feedback (spawn_agent)"},
		{"discovery", "Reply with a number (or /pick N) to choose."},
		{"discovery", "owner → cli:direct “2”"},
		{"discovery", "raven → cli:direct “The post office on Mill Lane is open until 17:30 today"},
		{"discovery", "executed before the agent loop: 0 model calls"},
		{"policy", "DENIED by policy layer dismissal_cooldown"},
		{"policy", "DENIED by policy layer session_cooldown"},
		{"policy", "DENIED by policy layer hour_quota"},
		{"policy", "DENIED by policy layer dedup"},
		{"policy", "deferred nudge: DENIED by policy layer quiet_hours"},
		{"policy", `sentinel/preferences.json ← { "muted_topics": [ "newsletter" ] }`},
		{"policy", "DENIED by policy layer preferences ↳ why: topic newsletter is muted in preferences"},
		{"cron", `fired "vitamins" → delivered (no model: verbatim)`},
		{"cron", "⚑ raven → cli:direct “Take your vitamin D with breakfast.”"},
		{"cron", `a cron job covered topic "stretch-ten"`},
		{"cron", "⚑ raven → cli:direct “Your Tuesday: 11:00 call with the bank"},
		{"outbox", "kept in the outbox as nudge n-"},
		{"outbox", "kept in the outbox (2 waiting)"},
		{"outbox", "2 kept messages shown on attach, oldest first; 0 left"},
		{"sentinel", "multiplier 1.00 → 0.75"},
		{"cron", `fired "stretch" → delivered`},
		{"cron", "⚑ raven → telegram:owner-phone “Reminder for everyone: the bins"},
		{"cron", `job "water" disabled: auto-decay: 3 fires`},
		{"cron", "requests coalesced into one heartbeat run"},
		{"cron", "no model call"},
		{"ask_user", "calls ask_user “Where shall I book Friday dinner with Sam?”"},
		{"ask_user", `clarify.request → TUI clients of tui:laptop {"question":"The engineer can service the boiler`},
		{"ask_user", `"recommended":"Monday 08:00","timeout_s":600,"index":0,"total":1,"batch":"`},
		{"ask_user", "→ telegram:owner-phone “[Dinner] Question: Where shall I book Friday dinner with Sam?"},
		{"ask_user", "1. Luigi's, Italian, 19:30 (recommended) 2. Sakura, Japanese, 20:00"},
		{"ask_user", "owner → telegram:owner-phone “2”"},
		{"ask_user", "answered: a question is pending on telegram:owner-phone → this message is its answer; no new turn"},
		{"ask_user", "ask_user → Where shall I book Friday dinner with Sam? Owner chose: Sakura, Japanese, 20:00"},
		{"ask_user", "→ telegram:owner-phone “Sakura it is"},
		{"ask_user", "The owner did not answer within 10 min. No option was chosen; do not assume the recommended one."},
		{"ask_user", "→ tui:laptop “You didn't answer"},
		{"ask_user", "refused: questions: expired: the question on tui:laptop is no longer waiting for an answer"},
		{"owner_question", "conversations.open tui:laptop → owner, incarnation"},
		{"owner_question", "calls conversation_question"},
		{"owner_question", "prompt carries: Project membership of"},
		{"owner_question", "/question → “How should I review your changes in this project?” 1. Line by line 2. Summary first"},
		{"owner_question", "input_answer refused: questions: forbidden (not_controller)"},
		{"owner_question", "Take Control of tui:laptop: lease until"},
		{"owner_question", "input_answer \"Summary first\" → accepted, receipt"},
		{"owner_question", "→ tui:laptop “Summary first, then."},
		{"owner_question", "the same answer again → the same receipt"},
		{"owner_question", "a different answer → refused: questions: conflict (already_answered)"},
		{"owner_question", "conversations.reset → incarnation"},
		{"owner_question", "cancelled (reason restart); nothing re-executed"},
		{"webhook", "phone POST http://127.0.0.1:"},
		{"webhook", "202 Accepted"},
		{"webhook", "appended: no turn running on webhook:shortcut"},
		{"webhook", "write_file → wrote"},
		{"webhook", `{"chat_id":"shortcut","text":"Added oat milk and coffee beans to notes/shopping.md.","origin":"user","proactive":false,"reply":true}`},
		{"webhook", "channels.Verify: signature valid"},
		{"webhook", `401 Unauthorized {"error":"webhook: signature does not match"}`},
		{"webhook", `401 Unauthorized {"error":"webhook: signature timestamp outside the window"}`},
		{"webhook", `409 Conflict {"error":"webhook: request already seen"}`},
		{"webhook", "4 requests, 1 reached the dispatcher"},
		{"web", "raven config set tools.web.fetch.allow_cidrs 127.0.0.1/32"},
		{"web", "calls web_fetch url="},
		{"web", "## Bartering"},
		{"web", "<<<UNTRUSTED_WEB_CONTENT id="},
		{"web", "169.254.169.254 is a cloud metadata address: refused by default"},
		{"mcp", "raven config set mcp.servers.recipes.url http://127.0.0.1:"},
		{"mcp", "calls recipes__find ingredient=“leeks”"},
		{"mcp", `<mcp-output server="recipes">`},
		{"mcp", "Leek and potato soup (40 min, serves 4)"},
		{"streaming", "tool line: · list_dir {\"path\":\"notes\"}"},
		{"streaming", "stream + “Your”"},
		{"streaming", "→ cli:direct “Your notes folder holds plumber.md and shopping.md.”"},
		{"streaming", "2 model calls streamed (stream: true, include_usage), 8 deltas shown"},
	} {
		if !strings.Contains(flat, norm(want.text)) {
			t.Errorf("section %s: output lacks %q", want.section, want.text)
		}
	}
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Section+"/"+e.Kind]++
	}
	for _, k := range []string{
		"foundation/spine.inject_result", "foundation/turn.inject_merged", "foundation/subagent.spawned",
		"sentinel/sentinel.injected", "sentinel/sentinel.defer_dispatch", "sentinel/policy.multiplier",
		"cron/cron.decayed", "cron/wake.fired", "cron/heartbeat.tick",
		"ask_user/clarify.request", "ask_user/clarify.expired", "webhook/webhook.outbound",
	} {
		if kinds[k] == 0 {
			t.Errorf("no %s event", k)
		}
	}
	if kinds["sentinel/sentinel.feedback"] != 5 {
		t.Errorf("feedback events = %d, want 5", kinds["sentinel/sentinel.feedback"])
	}
	checkAskUserAndWebhook(t, events)
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// checkAskUserAndWebhook asserts on the recorded data, not only the text:
// the statuses really returned and the payload really emitted.
func checkAskUserAndWebhook(t *testing.T, events []Event) {
	t.Helper()
	var statuses []int
	var dispatch []string
	for _, e := range events {
		switch e.Section + "/" + e.Kind {
		case "webhook/webhook.response":
			statuses = append(statuses, e.Data["status"].(int))
		case "ask_user/inbound.dispatch":
			dispatch = append(dispatch, e.Data["outcome"].(string))
		case "ask_user/delivery":
			if strings.Contains(e.Text, "[Boiler]") {
				t.Errorf("the tui question was posted as text: %s", e.Text)
			}
		case "webhook/webhook.outbound":
			if e.Data["verified"] != true {
				t.Errorf("outbound webhook not verified: %+v", e.Data)
			}
		}
	}
	if want := []int{202, 401, 401, 409}; !slices.Equal(statuses, want) {
		t.Errorf("webhook statuses = %v, want %v", statuses, want)
	}
	if want := []string{"appended", "answered", "appended"}; !slices.Equal(dispatch, want) {
		t.Errorf("ask_user dispatch outcomes = %v, want %v", dispatch, want)
	}
}

// Every proactive path must appear in the JSON events, with the data that
// proves it behaved (a layer name, a zero model-call count, a count shown).
func TestDemoJSONShowsEveryProactivePath(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	if _, err := Run(context.Background(), &buf, Options{JSON: true, Dir: t.TempDir()}); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, buf.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("demo took %s; it must stay under 10s", d)
	}
	var events []Event
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var e Event
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	has := func(section, kind string, ok func(d map[string]any) bool) bool {
		for _, e := range events {
			if e.Section == section && e.Kind == kind && (ok == nil || ok(e.Data)) {
				return true
			}
		}
		return false
	}
	eq := func(k string, v any) func(map[string]any) bool {
		return func(d map[string]any) bool { return d[k] == v }
	}
	for _, c := range []struct {
		path, section, kind string
		ok                  func(map[string]any) bool
	}{
		{"nudge", "sentinel", "sentinel.tick", eq("route", "nudge")},
		{"nudge_inject charged when queued", "sentinel", "policy.charged", nil},
		{"nudge_inject rides one reply, one copy", "sentinel", "sentinel.injected", eq("copies", 1.0)},
		{"nudge_defer dispatched once settled", "sentinel", "sentinel.defer_dispatch", nil},
		{"spawn_agent digest through the dispatcher", "sentinel", "sentinel.spawn_result", eq("tracked", true)},
		{"adaptive multiplier", "sentinel", "policy.multiplier", nil},
		{"discovery menu", "discovery", "discovery.menu", eq("options", 3.0)},
		{"discovery pick with no model call", "discovery", "discovery.pick", func(d map[string]any) bool {
			return d["agent_calls"] == 0.0 && d["planner_calls"] == 0.0 && d["state"] == "done"
		}},
		{"denied: quiet_hours", "policy", "sentinel.tick", eq("layer", "quiet_hours")},
		{"denied: session_cooldown", "policy", "sentinel.tick", eq("layer", "session_cooldown")},
		{"denied: dismissal_cooldown", "policy", "sentinel.tick", eq("layer", "dismissal_cooldown")},
		{"denied: hour_quota", "policy", "sentinel.tick", eq("layer", "hour_quota")},
		{"denied: dedup", "policy", "sentinel.tick", eq("layer", "dedup")},
		{"preference learned", "policy", "preferences.learned", nil},
		{"denied: preferences (learned)", "policy", "sentinel.tick", eq("layer", "preferences")},
		{"cron verbatim", "cron", "cron.fired", eq("verbatim", true)},
		{"cron fire suppresses same-topic nudge", "cron", "sentinel.tick", eq("layer", "dedup")},
		{"cron suppression explained", "cron", "cron.suppressed", nil},
		{"heartbeat template-only, no model call", "cron", "heartbeat.tick", func(d map[string]any) bool {
			return d["route"] == "template_only" && d["model_called"] == false
		}},
		{"heartbeat task delivers its result", "cron", "heartbeat.run", func(d map[string]any) bool {
			return d["route"] == "run" && d["delivered"] == 1.0
		}},
		{"outbox keeps", "outbox", "outbox.queued", eq("waiting", 2.0)},
		{"outbox shown on attach", "outbox", "outbox.delivered", func(d map[string]any) bool { return d["count"] == 2.0 && d["left"] == 0.0 }},
		{"ask_user on a TUI", "ask_user", api.NotifyClarifyRequest.Name(), nil},
		{"ask_user expired", "ask_user", "clarify.expired", nil},
		{"owner conversation opened", "owner_question", "conversation.open", func(d map[string]any) bool {
			return d["created"] == true && d["can_hold_question"] == true
		}},
		{"the model leaves a durable question", "owner_question", "model.tool_call", eq("tool", "conversation_question")},
		{"membership fact in the owner turn", "owner_question", "turn.fact", eq("status", "not_member")},
		{"question shown in the TUI", "owner_question", "tui.question", eq("options", 2.0)},
		{"second device refused before Take Control", "owner_question", "question.refused", eq("code", "forbidden")},
		{"second device takes control", "owner_question", "control.take", eq("holder", "tablet")},
		{"answer accepted from the tablet", "owner_question", "question.answered", func(d map[string]any) bool {
			return d["status"] == "answered" && d["by"] == "tablet" && d["run_id"] != ""
		}},
		{"duplicate answer, same receipt", "owner_question", "question.duplicate", eq("same", true)},
		{"different answer refused", "owner_question", "question.conflict", eq("code", "conflict")},
		{"reset rotates the incarnation", "owner_question", "conversation.reset", func(d map[string]any) bool {
			return d["old"] != d["new"] && d["new"] != ""
		}},
		{"restart cancels the pending question", "owner_question", "question.recovered", func(d map[string]any) bool {
			return d["status"] == "cancelled" && d["reason"] == "restart" && d["model_calls"] == 5.0
		}},
	} {
		if !has(c.section, c.kind, c.ok) {
			t.Errorf("%s: no %s/%s event with the expected data", c.path, c.section, c.kind)
		}
	}
	// The proactive messages themselves reached the owner.
	for _, want := range []struct{ section, origin string }{
		{"sentinel", "sentinel"}, {"discovery", "sentinel"}, {"cron", "cron"}, {"cron", "heartbeat"}, {"outbox", "cron"},
	} {
		origin := func(d map[string]any) bool { return d["origin"] == want.origin }
		if !has(want.section, "delivery", origin) && !has(want.section, "turn.reply", origin) {
			t.Errorf("section %s: no proactive delivery of origin %s", want.section, want.origin)
		}
	}
}

func TestDemoJSONAndSection(t *testing.T) {
	var buf bytes.Buffer
	events, err := Run(context.Background(), &buf, Options{JSON: true, Section: "foundation", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(events) || len(lines) == 0 {
		t.Fatalf("%d lines for %d events", len(lines), len(events))
	}
	for _, l := range lines {
		var e Event
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if e.Section != "foundation" || e.At.IsZero() || e.Kind == "" {
			t.Errorf("bad event %+v", e)
		}
	}
}

func TestDemoRemovesItsDataUnlessKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := Run(context.Background(), &bytes.Buffer{}, Options{Section: "foundation", Dir: dir, Keep: keep}); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		if got := len(ents) == 1; got != keep {
			t.Errorf("keep=%v: %d entries left in %s", keep, len(ents), dir)
		}
	}
}

func TestUnknownSection(t *testing.T) {
	_, err := Run(context.Background(), &bytes.Buffer{}, Options{Section: "nope", Dir: t.TempDir()})
	if !errors.Is(err, ErrUnknownSection) {
		t.Fatalf("err = %v, want ErrUnknownSection", err)
	}
}

// norm collapses the timeline's wrapping and column padding.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }
