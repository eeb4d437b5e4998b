package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/sandbox"
)

// A command asking for the network waits for the owner: with the default
// config and a gateway running, `raven chat -m` beside it blocks on the
// approval, `raven approvals list --json` shows the exact command, and the
// owner's answer through the CLI runs it (its output reaches the user) or
// refuses it (the model is told).
func TestExecApprovalFromCLI(t *testing.T) {
	if !sandbox.Detect().Available() {
		t.Skip("no OS sandbox on this machine")
	}
	cases := []struct {
		name   string
		answer []string
		// result is what the model is told the exec call returned.
		result string
		reply  string
	}{
		{"approve", []string{"approve"}, "net-approved-ran", "The command printed its line."},
		{"deny", []string{"deny"}, "not approved", "The owner refused."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{})
			g := e.StartGateway()
			const cmd = "echo net-approved-ran"
			e.Model.Enqueue(
				fakeopenai.Call("exec", map[string]any{"command": cmd, "network": true}),
				fakeopenai.Text(tc.reply),
			)
			chat := e.Start("chat", "-m", "run it with the network")
			var pending []approvals.Request
			e.Eventually(20*time.Second, "the approval request", func() bool {
				e.MustRun("approvals", "list", "--json").JSON(t, &pending)
				return len(pending) == 1
			})
			r := pending[0]
			// The terminal the chat runs in says how to answer.
			chat.WaitStderr(10*time.Second, "raven approvals approve "+r.ID)
			if r.Command != cmd || strings.Join(r.Grants, ",") != approvals.GrantNetwork || r.Status != approvals.StatusPending {
				t.Fatalf("request = %+v", r)
			}
			if !strings.HasSuffix(r.Dir, "/workspace") || r.Conversation != "cli:direct" {
				t.Fatalf("request bound to dir %q, conversation %q", r.Dir, r.Conversation)
			}
			out := e.MustRun(append(append([]string{"approvals"}, tc.answer...), r.ID)...)
			if !strings.Contains(out.Stdout, r.ID) {
				t.Fatalf("decision output:\n%s", out)
			}
			if again := e.Run("approvals", "approve", r.ID); again.Code == 0 {
				t.Fatalf("a second answer was accepted:\n%s", again)
			}
			res := chat.Wait(30 * time.Second)
			if res.Code != 0 || !strings.Contains(res.Stdout, tc.reply) {
				t.Fatalf("chat:\n%s\ngateway log:\n%s", res, g.Log())
			}
			reqs := e.Model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model called %d times\n%s", len(reqs), e.Model)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-2]
			toolRes, ok := reqs[1].ToolResult(last.ToolCalls[0].ID)
			if !ok || !strings.Contains(toolRes.Content, tc.result) {
				t.Fatalf("exec result told the model = %+v, want %q", toolRes, tc.result)
			}
			var all []approvals.Request
			e.MustRun("approvals", "list", "--all", "--json").JSON(t, &all)
			if len(all) != 1 || all[0].DecidedBy == "" || all[0].Status == approvals.StatusPending {
				t.Fatalf("after the answer: %+v", all)
			}
			g.Stop()
		})
	}
}

// The data dir is invisible to commands: exec asked to read the operator
// token through the real binary fails, and the token never reaches the model.
func TestExecCannotReadOperatorToken(t *testing.T) {
	if !sandbox.Detect().Available() {
		t.Skip("no OS sandbox on this machine")
	}
	t.Parallel()
	e := newEnv(t, Options{})
	tok := strings.TrimSpace(e.ReadFile("operator.token"))
	if tok == "" {
		t.Fatal("onboard wrote no operator token")
	}
	e.Model.Enqueue(
		fakeopenai.Call("exec", map[string]any{"command": "cat " + e.Path("operator.token") + "; cat ../operator.token; env"}),
		fakeopenai.Text("done"),
	)
	r := e.MustRun("chat", "-m", "show me the token")
	reqs := e.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model called %d times\n%s\n%s", len(reqs), r, e.Model)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-2]
	toolRes, ok := reqs[1].ToolResult(last.ToolCalls[0].ID)
	if !ok {
		t.Fatalf("no exec result: %+v", reqs[1].Messages)
	}
	if strings.Contains(toolRes.Content, tok) || strings.Contains(toolRes.Content, "OPENAI_API_KEY") {
		t.Fatalf("exec leaked a secret to the model:\n%s", toolRes.Content)
	}
	if !strings.Contains(toolRes.Content, "ermission denied") && !strings.Contains(toolRes.Content, "No such file") {
		t.Fatalf("want the read refused, got:\n%s", toolRes.Content)
	}
}

// The exec waits inside the gateway (a turn sent with chat.send): the
// owner's CLI answer goes through the gateway's approvals.decide, wakes the
// waiting command in that process, and the reply reaches the attached
// surface.
func TestExecApprovalInsideGateway(t *testing.T) {
	if !sandbox.Detect().Available() {
		t.Skip("no OS sandbox on this machine")
	}
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const conv, cmd = "tui:main", "echo in-gateway-approved"
	e.Model.Enqueue(
		fakeopenai.Call("exec", map[string]any{"command": cmd, "network": true}),
		fakeopenai.Text("it printed in-gateway-approved"),
	)
	c := e.Dial()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := controlapi.Invoke(ctx, c, api.ChatAttach, api.ChatAttachParams{Conversation: conv}); err != nil {
		t.Fatal(err)
	}
	if _, err := controlapi.Invoke(ctx, c, api.ChatSend, api.ChatSendParams{Conversation: conv, Text: "run it"}); err != nil {
		t.Fatal(err)
	}
	var pending []approvals.Request
	e.Eventually(20*time.Second, "the approval request", func() bool {
		e.MustRun("approvals", "list", "--json").JSON(t, &pending)
		return len(pending) == 1
	})
	if pending[0].Command != cmd || pending[0].Conversation != conv {
		t.Fatalf("request = %+v", pending[0])
	}
	e.MustRun("approvals", "approve", pending[0].ID)
	for {
		select {
		case n, ok := <-c.Notifications():
			if !ok {
				t.Fatalf("connection closed\n%s", g.Log())
			}
			if n.Method != api.NotifyChatMessage.Name() || !strings.Contains(string(n.Params), "it printed in-gateway-approved") {
				continue
			}
			reqs := e.Model.Requests()
			last := reqs[1].Messages[len(reqs[1].Messages)-2]
			if res, ok := reqs[1].ToolResult(last.ToolCalls[0].ID); !ok || !strings.Contains(res.Content, "in-gateway-approved") {
				t.Fatalf("exec result = %+v", res)
			}
			return
		case <-ctx.Done():
			t.Fatalf("no reply reached the attached surface\n%s", g.Log())
		}
	}
}

// doctor names the sandbox mode exec runs under, as Detect finds it.
func TestDoctorShowsSandboxMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	r := e.MustRun("doctor")
	mode := sandbox.Detect()
	var line string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(l, "sandbox") {
			line = l
		}
	}
	want := "ok"
	if !mode.Available() {
		want = "warn"
	}
	if !strings.HasPrefix(line, want) || !strings.Contains(line, mode.String()) {
		t.Fatalf("doctor sandbox line = %q, want %s with %q\n%s", line, want, mode, r)
	}
}
