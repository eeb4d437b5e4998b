package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// daytimeTZ is a TZ under which the wall clock reads early afternoon, so
// the default quiet hours (23:00–07:00 local) never hold a test nudge back
// whenever the suite runs.
func daytimeTZ() string {
	off := 13 - time.Now().UTC().Hour() // local = UTC + off
	if off > 14 {
		off -= 24
	}
	if off < -12 {
		off += 24
	}
	// Etc/GMT-N is UTC+N (POSIX sign).
	switch {
	case off > 0:
		return fmt.Sprintf("TZ=Etc/GMT-%d", off)
	case off < 0:
		return fmt.Sprintf("TZ=Etc/GMT+%d", -off)
	}
	return "TZ=Etc/GMT"
}

// The Sentinel decides to spawn a micro-agent (ISSUE8 §2.10): its digest
// reaches the owner's terminal through the nudge dispatcher, is logged for
// feedback, and is in the owner's session, so the next chat turn's model
// request carries it.
func TestSpawnDigestReachesOwnerAndNextTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Env: []string{daytimeTZ()}})
	const digest = "Digest: 3 unread, one from the landlord about Friday's visit."
	e.Model.On(fakeopenai.Offers("planner_decision"), fakeopenai.Always(fakeopenai.Call("planner_decision", map[string]any{
		"action": "spawn_agent", "spawn_task": "summarise my unread mail", "target_session": "cli:direct",
		"priority": "high", "proactivity_score": 0.9, "reason": "the inbox is piling up", "topic": "mail",
	})))
	e.Model.On(fakeopenai.Offers("propose_tasks"), fakeopenai.Always(fakeopenai.Text("nothing today")))
	e.Model.On(fakeopenai.LastUserContains("background subagent"), fakeopenai.Always(fakeopenai.Text(digest)))

	r := e.MustRun("sentinel", "tick")
	if !strings.Contains(r.Stdout, "spawn_agent") || !strings.Contains(r.Stdout, "delivered: yes") || !strings.Contains(r.Stdout, digest) {
		t.Fatalf("the tick did not spawn, or its digest did not reach the terminal:\n%s", r)
	}
	fb := e.ReadJSONL("sentinel/feedback.jsonl")
	tracked := false
	for _, rec := range fb {
		if rec["action"] == "spawn_agent" && strings.Contains(fmt.Sprint(rec["content"]), "Digest: 3 unread") {
			tracked = true
		}
	}
	if !tracked {
		t.Fatalf("digest not tracked for feedback: %v", fb)
	}

	e.MustRun("chat", "-m", "anything from the landlord?")
	var next *fakeopenai.Request
	for _, req := range e.Model.Requests() {
		if req.LastUser() == "anything from the landlord?" {
			next = &req
		}
	}
	if next == nil {
		t.Fatalf("no model request for the next turn:\n%s", e.Model)
	}
	for _, m := range next.Messages {
		if m.Role == "assistant" && strings.Contains(m.Content, digest) {
			return
		}
	}
	t.Fatalf("the next turn's request does not carry the digest: %+v", next.Messages)
}

// `raven sentinel discover` beside a gateway: nobody is attached, so the
// gateway keeps the menu in the outbox (ISSUE8 §2.5, §3); the chat that
// attaches shows it, and the owner's "1" there is the pick (§2.1), run
// without any model call for it.
func TestDiscoveryMenuFromOutboxPickedInChat(t *testing.T) {
	t.Parallel()
	// The daily run is off so the only menu is the one asked for.
	e := newEnv(t, Options{Env: []string{daytimeTZ()}, Config: map[string]any{"sentinel.discovery": false}})
	e.Model.On(fakeopenai.Offers("propose_tasks"), fakeopenai.Always(fakeopenai.Call("propose_tasks", map[string]any{
		"title": "A few things for today:",
		"options": []map[string]any{
			{"title": "Rent reminder", "kind": "reply", "reply": "Rent is due Friday."},
			{"title": "Passport office", "kind": "reply", "reply": "The passport office closes at 16:00."},
		},
	})))
	g := e.StartGateway()
	r := e.MustRun("sentinel", "discover")
	if !strings.Contains(r.Stdout, "running gateway") {
		t.Fatalf("discover did not go through the gateway:\n%s", r)
	}
	ob := e.Outbox()
	e.Eventually(20*time.Second, "the menu kept in the outbox", func() bool {
		n, err := ob.Count(context.Background())
		return err == nil && n == 1
	})

	chat := e.Start("chat")
	chat.WaitStdout(10*time.Second, "1. Rent reminder")
	before := len(e.Model.Requests())
	chat.Send("1")
	chat.WaitStdout(10*time.Second, "Rent is due Friday.")
	chat.CloseStdin()
	if res := chat.Wait(10 * time.Second); res.Code != 0 {
		t.Fatalf("chat exit:\n%s", res)
	}
	for _, req := range e.Model.Requests()[before:] {
		if req.LastUser() == "1" {
			t.Fatalf("the pick reached the agent loop:\n%s", e.Model)
		}
	}
	var pd struct {
		Decisions []struct {
			State  string   `json:"state"`
			Picked int      `json:"picked"`
			Shown  []string `json:"shown"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(e.ReadFile("sentinel/pending_decisions.json")), &pd); err != nil {
		t.Fatal(err)
	}
	if len(pd.Decisions) != 1 || pd.Decisions[0].State != "done" || pd.Decisions[0].Picked != 1 {
		t.Fatalf("menu after the pick: %+v", pd)
	}
	g.Stop()
}
