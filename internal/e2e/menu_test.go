package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// menuState is the state of the newest menu in pending_decisions.json.
func (e *Env) menuState() (state string, picked int) {
	e.T.Helper()
	var f struct {
		Decisions []struct {
			State  string `json:"state"`
			Picked int    `json:"picked"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(e.ReadFile("sentinel/pending_decisions.json")), &f); err != nil || len(f.Decisions) == 0 {
		e.T.Fatalf("pending_decisions.json: %v %+v", err, f)
	}
	d := f.Decisions[len(f.Decisions)-1]
	return d.State, d.Picked
}

// offerMenu has discovery propose opts and delivers the menu to the
// terminal session cli:direct (`raven sentinel discover` with no gateway).
func (e *Env) offerMenu(opts ...map[string]any) {
	e.T.Helper()
	e.Model.On(fakeopenai.Offers(discoveryTool), fakeopenai.Always(fakeopenai.Call(discoveryTool, map[string]any{
		"title": "A few things I could do today:", "options": opts})))
	e.MustRun("chat", "-m", "hello")
	var res discoverResult
	e.MustRun("sentinel", "discover", "--json").JSON(e.T, &res)
	if res.Result == nil || !res.Result.Delivered {
		e.T.Fatalf("menu not delivered: %+v", res)
	}
}

var (
	replyOption = map[string]any{"title": "Summarise this week's notes", "kind": "reply", "reply": "Here is your week: three meetings, one deadline."}
	spawnOption = map[string]any{"title": "Check the build status", "kind": "spawn", "task": "Check whether the nightly build passed and report."}
	toolOption  = map[string]any{"title": "Show my memory file", "kind": "tool", "tool": "read_file", "args": map[string]any{"path": "MEMORY.md"}}
)

// §2.1: the owner's pick of a discovery menu is executed without a model
// call, though the menu itself just used the session's cooldown and the
// task-discovery topic's hourly quota (the pick is the owner's answer, not
// a new nudge); the menu is closed once the pick succeeded, so a second
// "1" is an ordinary message.
func TestDiscoveryPickExecutedWithoutModelCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.offerMenu(replyOption, spawnOption)
	before := len(e.Model.Requests())
	r := e.MustRun("chat", "-m", "1")
	if strings.TrimSpace(r.Stdout) != "Here is your week: three meetings, one deadline." || len(e.Model.Requests()) != before {
		t.Fatalf("pick 1:\n%s\n%s", r, e.Model)
	}
	if st, picked := e.menuState(); st != "done" || picked != 1 {
		t.Fatalf("menu after the pick: %s (picked %d)", st, picked)
	}
	if r := e.MustRun("chat", "-m", "1"); !strings.Contains(r.Stdout, "fake reply to: 1") {
		t.Fatalf("a second 1 after the menu closed:\n%s", r)
	}
}

// §2.1: a pick the policy denies says which layer and why, keeps the menu
// open, and the same pick succeeds once the cause is gone.
func TestDeniedPickSaysWhyAndCanBeRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.offerMenu(replyOption, spawnOption)
	e.MustRun("sentinel", "prefs", "set", "day_quota", "1") // the menu used it
	r := e.MustRun("chat", "-m", "1")
	if !strings.Contains(r.Stdout, "day_quota") || !strings.Contains(r.Stdout, "reply 1 to try again") {
		t.Fatalf("denied pick:\n%s", r)
	}
	if st, _ := e.menuState(); st != "open" {
		t.Fatalf("menu after a denied pick: %s", st)
	}
	e.MustRun("sentinel", "prefs", "unset", "day_quota")
	before := len(e.Model.Requests())
	if r := e.MustRun("chat", "-m", "1"); !strings.Contains(r.Stdout, "Here is your week") || len(e.Model.Requests()) != before {
		t.Fatalf("retried pick:\n%s\n%s", r, e.Model)
	}
	if st, _ := e.menuState(); st != "done" {
		t.Fatalf("menu after the retried pick: %s", st)
	}
}

// §2.7: a menu option can run one of the agent's tools: discovery keeps a
// tool option, and picking it runs the tool (read_file here) through the
// policy, its output the reply, without a model call.
func TestDiscoveryToolOptionRunsAgentTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.offerMenu(replyOption, toolOption)
	before := len(e.Model.Requests())
	r := e.MustRun("chat", "-m", "2")
	if !strings.Contains(r.Stdout, "Things Raven should always remember") || len(e.Model.Requests()) != before {
		t.Fatalf("pick of the tool option:\n%s\n%s\npending decisions:\n%s", r, e.Model, e.ReadFile("sentinel/pending_decisions.json"))
	}
	if st, picked := e.menuState(); st != "done" || picked != 2 {
		t.Fatalf("menu after the tool pick: %s (picked %d)", st, picked)
	}
}

// §2.10: a picked spawn's result goes through the dispatcher: the digest
// reaches the owner's terminal, is tracked for feedback (`raven nudges`
// lists it and takes a verdict on it), and is in the owner's session, so
// the next turn's model request carries it.
func TestSpawnDigestTrackedAndInNextTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	const digest = "Digest: the nightly build passed."
	e.Model.On(fakeopenai.LastUserContains("nightly build passed and report"), fakeopenai.Always(fakeopenai.Text(digest)))
	e.offerMenu(replyOption, spawnOption)
	p := e.Start("chat")
	p.Send("2")
	p.WaitStdout(10*time.Second, digest)
	p.Send("what did you find?")
	p.WaitStdout(10*time.Second, "fake reply to: what did you find?")
	p.CloseStdin()
	if r := p.Wait(10 * time.Second); r.Code != 0 {
		t.Fatalf("%s", r)
	}
	var carried bool
	for _, req := range e.Model.Requests() {
		if req.LastUser() == "what did you find?" {
			for _, m := range req.Messages {
				carried = carried || (m.Role == "assistant" && strings.Contains(m.Content, digest))
			}
		}
	}
	if !carried {
		t.Fatalf("the next turn's request does not carry the digest:\n%s", e.Model)
	}
	var id string
	for _, n := range e.Nudges() {
		if strings.Contains(n.Content, digest) {
			id = n.NudgeID
		}
	}
	if id == "" {
		t.Fatalf("the digest is not tracked for feedback: %+v", e.Nudges())
	}
	e.MustRun("nudges", "feedback", id, "accepted")
}

// A spawn picked with one-shot `chat -m 2` reports in that terminal: the
// command waits for the micro-agent it started instead of cancelling it
// on exit, and nothing is left in the outbox. The micro-agent's answer is
// held until the pick's reply is printed, so the command would have exited
// without waiting.
func TestOneShotPickWaitsForItsSpawn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	const digest = "Digest: the nightly build passed."
	hold := make(chan struct{})
	e.Model.On(fakeopenai.LastUserContains("nightly build passed and report"),
		fakeopenai.Always(fakeopenai.Reply{Text: digest, Wait: hold}))
	e.offerMenu(replyOption, spawnOption)
	p := e.Start("chat", "-m", "2")
	p.WaitStderr(10*time.Second, "waiting for 1 background task")
	close(hold)
	r := p.Wait(10 * time.Second)
	if r.Code != 0 || !strings.Contains(r.Stdout, digest) {
		t.Fatalf("the picked spawn's digest did not reach the one-shot terminal:\n%s", r)
	}
	if out := e.MustRun("inbox", "--json"); strings.Contains(out.Stdout, "couldn't finish") || strings.Contains(out.Stdout, digest) {
		t.Fatalf("the spawn's result went to the outbox instead:\n%s", out)
	}
}
