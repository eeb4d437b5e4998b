package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
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

// menuOptions is the discovery menu the fake model proposes.
var menuOptions = map[string]any{
	"title": "A few things for today:",
	"options": []map[string]any{
		{"title": "Rent reminder", "kind": "reply", "reply": "Rent is due Friday."},
		{"title": "Passport office", "kind": "reply", "reply": "The passport office closes at 16:00."},
	},
}

// webhookPeer is the owner's phone behind the webhook channel: it records
// what Raven posts to it.
type webhookPeer struct {
	mu   sync.Mutex
	msgs []string
	srv  *httptest.Server
}

func newWebhookPeer(t *testing.T) *webhookPeer {
	p := &webhookPeer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Text string `json:"text"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err == nil {
			p.mu.Lock()
			p.msgs = append(p.msgs, m.Text)
			p.mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *webhookPeer) got(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// A menu planned for the terminal the owner last used, which nobody is
// attached to, goes to the forward channel (ISSUE8 §2.5); the owner's "2"
// sent back on that channel is the pick (§2.1), with no model call for it.
func TestDiscoveryMenuOnForwardChannelPickedThere(t *testing.T) {
	t.Parallel()
	const secret = "e2e-webhook-secret"
	peer := newWebhookPeer(t)
	e := newEnv(t, Options{Env: []string{daytimeTZ()}, Config: map[string]any{
		"sentinel.discovery": false, "channels.forward": []string{"webhook:phone"},
		"channels.webhook.enabled": true, "channels.webhook.listen": "127.0.0.1:0", "channels.webhook.name": "owner",
		"channels.webhook.secret": secret, "channels.webhook.outbound_url": peer.srv.URL,
	}})
	e.Model.On(fakeopenai.Offers("propose_tasks"), fakeopenai.Always(fakeopenai.Call("propose_tasks", menuOptions)))
	e.MustRun("chat", "-m", "hello") // the owner's last session: cli:direct
	g := e.StartGateway()
	g.WaitLog(10*time.Second, "webhook channel listening")
	addr := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(g.Log())
	if addr == nil {
		t.Fatalf("no webhook address in the log:\n%s", g.Log())
	}

	e.MustRun("sentinel", "discover")
	e.Eventually(20*time.Second, "the menu on the forward channel", func() bool { return peer.got("2. Passport office") })

	before := len(e.Model.Requests())
	body := []byte(`{"chat_id":"phone","text":"2"}`)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr[1]+"/hooks/owner", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(channels.SignatureHeader, channels.Sign([]byte(secret), time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook inbound: %s\n%s", resp.Status, g.Log())
	}
	e.Eventually(20*time.Second, "the pick's answer on the forward channel", func() bool { return peer.got("passport office closes at 16:00") })
	for _, r := range e.Model.Requests()[before:] {
		if r.LastUser() == "2" {
			t.Fatalf("the pick reached the agent loop:\n%s", e.Model)
		}
	}
	// Planned for the terminal, answered where it was shown.
	if pd := readMenus(t, e); len(pd) != 1 || pd[0].Session != "cli:direct" || strings.Join(pd[0].Shown, ",") != "webhook:phone" || pd[0].State != "done" || pd[0].Picked != 2 {
		t.Fatalf("menu after the pick: %+v", pd)
	}
	g.Stop()
}

type menuState struct {
	Session string   `json:"session"`
	State   string   `json:"state"`
	Picked  int      `json:"picked"`
	Shown   []string `json:"shown"`
}

func readMenus(t *testing.T, e *Env) []menuState {
	t.Helper()
	var f struct {
		Decisions []menuState `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(e.ReadFile("sentinel/pending_decisions.json")), &f); err != nil {
		t.Fatal(err)
	}
	return f.Decisions
}

// `raven sentinel discover` beside a gateway: nobody is attached, so the
// gateway keeps the menu in the outbox (ISSUE8 §2.5, §3); the chat that
// attaches shows it, and the owner's "1" there is the pick (§2.1), run
// without any model call for it.
func TestDiscoveryMenuFromOutboxPickedInChat(t *testing.T) {
	t.Parallel()
	// The daily run is off so the only menu is the one asked for.
	e := newEnv(t, Options{Env: []string{daytimeTZ()}, Config: map[string]any{"sentinel.discovery": false}})
	e.Model.On(fakeopenai.Offers("propose_tasks"), fakeopenai.Always(fakeopenai.Call("propose_tasks", menuOptions)))
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
	if pd := readMenus(t, e); len(pd) != 1 || pd[0].State != "done" || pd[0].Picked != 1 {
		t.Fatalf("menu after the pick: %+v", pd)
	}
	g.Stop()
}
