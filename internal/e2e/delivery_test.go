package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/outbox"
)

type inboxListing struct {
	Pending int           `json:"pending"`
	Items   []outbox.Item `json:"items"`
}

func (e *Env) inbox() inboxListing {
	e.T.Helper()
	var l inboxListing
	e.MustRun("inbox", "--json").JSON(e.T, &l)
	return l
}

func tickEvent(ev *Events, within time.Duration) TickRecord {
	ev.e.T.Helper()
	x := ev.WaitFor(within, "sentinel.tick", Kind("sentinel.tick"))
	var rec TickRecord
	if err := json.Unmarshal(x.Payload, &rec); err != nil {
		ev.e.T.Fatalf("sentinel.tick payload: %v: %s", err, x.Payload)
	}
	return rec
}

// §2.11: the gateway runs its first Sentinel tick at start, not one
// interval (30m) later. §2.5: its nudge, with nobody attached, never goes
// to the cli session the owner used earlier: with channels.forward set it
// reaches the forward channel (the owner's webhook receiver), with nothing
// configured it waits in the outbox.
func TestGatewayFirstTickNudgeTarget(t *testing.T) {
	t.Parallel()
	const msg = "The recycling goes out tonight."
	cases := []struct {
		name    string
		forward bool
	}{
		{"forward webhook", true},
		{"nothing configured", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := midday.SentinelOptions(nil)
			e := newEnv(t, opts)
			var hook *WebhookReceiver
			if c.forward {
				hook = e.StartWebhookReceiver()
				e.PatchConfig(hook.WebhookConfig("owner"))
			}
			e.PlanSequence(Decision(nudge(msg, nil)))
			e.MustRun("chat", "-m", "hello") // a cli session nobody is attached to any more
			start := time.Now()
			g := e.StartGateway()
			ev := e.Subscribe()
			rec := tickEvent(ev, 10*time.Second)
			t.Logf("first tick %s after exec", time.Since(start).Round(time.Millisecond))
			if rec.Action != "nudge" || !rec.Delivered || rec.NudgeID == "" {
				t.Fatalf("first tick: %s\n%s", rec, g.Log())
			}
			ns := e.Nudges()
			if len(ns) != 1 || strings.HasPrefix(ns[0].Session, "cli:") || strings.HasPrefix(ns[0].Session, "tui:") {
				t.Fatalf("nudge went to an ephemeral surface nobody is attached to: %+v", ns)
			}
			in := e.inbox()
			if c.forward {
				e.Eventually(10*time.Second, "webhook delivery", func() bool { return len(hook.Messages()) > 0 })
				m := hook.Messages()[0]
				if m.ChatID != "owner" || !strings.Contains(m.Text, msg) || !m.Proactive || len(hook.Rejected()) > 0 {
					t.Fatalf("webhook got %+v (rejected %q)", hook.Messages(), hook.Rejected())
				}
				if ns[0].Session != "webhook:owner" || in.Pending != 0 {
					t.Fatalf("session %q, %d in the outbox", ns[0].Session, in.Pending)
				}
			} else if in.Pending != 1 || !strings.Contains(in.Items[0].Content, msg) || in.Items[0].Origin != outbox.OriginSentinel {
				t.Fatalf("outbox = %+v (nudge session %q)\n%s", in, ns[0].Session, g.Log())
			}
			g.Stop()
		})
	}
}

// §3: a `cron add --deliver` reminder fired by a gateway with no surface
// attached waits in the outbox; `raven chat` attaching shows it, and the
// outbox is empty afterwards.
func TestCronReminderWaitsInOutboxUntilChatAttaches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	ev := e.Subscribe()
	at := time.Now().Add(2 * time.Second).Format(time.RFC3339)
	id := strings.TrimSpace(e.MustRun("cron", "add", "--name", "standup", "--message", "Stand-up in 5", "--at", at, "--deliver").Stdout)
	ev.WaitFor(15*time.Second, "outbox.queued", Kind("outbox.queued"))
	in := e.inbox()
	if in.Pending != 1 || in.Items[0].Origin != outbox.OriginCron || !strings.Contains(in.Items[0].Content, "Stand-up in 5") {
		t.Fatalf("outbox after the cron fire of %s: %+v\n%s", id, in, g.Log())
	}
	p := e.Start("chat")
	p.WaitStdout(10*time.Second, "Stand-up in 5")
	e.Eventually(10*time.Second, "outbox empty after chat attached", func() bool { return e.inbox().Pending == 0 })
	p.CloseStdin()
	if r := p.Wait(10 * time.Second); r.Code != 0 {
		t.Fatalf("%s", r)
	}
	if st, _ := e.Outbox().Get(context.Background(), in.Items[0].ID); st.DeliveredTo == "" {
		t.Fatalf("outbox item after chat attached: %+v", st)
	}
	g.Stop()
}

// §3: `raven cron serve` beside a running gateway refuses to start (it has
// no model and would claim jobs it cannot run).
func TestCronServeRefusesBesideGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	e.MustRun("cron", "add", "--name", "standup", "--message", "Stand-up in 5", "--every", "1h", "--deliver")
	p := e.Start("cron", "serve")
	r := p.Wait(10 * time.Second)
	if r.Code == 0 || !strings.Contains(r.Stderr, "gateway") {
		t.Fatalf("cron serve beside a gateway:\n%s", r)
	}
	var jobs []struct {
		Enabled bool `json:"enabled"`
	}
	e.MustRun("cron", "list", "--json").JSON(t, &jobs)
	if len(jobs) != 1 || !jobs[0].Enabled {
		t.Fatalf("jobs after the refused serve: %+v", jobs)
	}
	g.Stop()
}

// §2.5 and §3: a heartbeat with a real task, run by the gateway with
// nobody attached, keeps its result in the outbox instead of dropping it.
func TestHeartbeatResultWaitsInOutbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.WriteFile("workspace/HEARTBEAT.md", "# Heartbeat\n\n## Tasks\n\n- Every time: tell me whether the nightly build passed.\n")
	e.Model.On(fakeopenai.Offers("heartbeat_decision"), fakeopenai.Always(fakeopenai.Call("heartbeat_decision",
		map[string]any{"action": "run", "tasks": "Tell the owner whether the nightly build passed.", "reason": "due every time"})))
	e.Model.On(fakeopenai.LastUserContains("nightly build"), fakeopenai.Always(fakeopenai.Text("The nightly build passed.")))
	g := e.StartGateway()
	ev := e.Subscribe()
	e.MustRun("heartbeat", "trigger")
	ev.WaitFor(15*time.Second, "outbox.queued", Kind("outbox.queued"))
	in := e.inbox()
	if in.Pending != 1 || in.Items[0].Origin != outbox.OriginHeartbeat || !strings.Contains(in.Items[0].Content, "The nightly build passed.") {
		t.Fatalf("outbox after the heartbeat: %+v\n%s\n%s", in, e.Model, g.Log())
	}
	g.Stop()
}
