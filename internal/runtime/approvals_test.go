package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/spine"
)

// operatorOf returns a verified operator principal of a's credential store.
func operatorOf(t *testing.T, a *Runtime) auth.Principal {
	t.Helper()
	tok, err := a.Auth().Create(context.Background(), auth.RoleOperator, auth.OperatorName, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Auth().Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lastToolResult is what the model was told the last tool call returned.
func lastToolResult(t *testing.T, s *llm.Scripted) string {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never called")
	}
	msgs := reqs[len(reqs)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleTool {
			return msgs[i].Content
		}
	}
	t.Fatal("no tool result in the model's last request")
	return ""
}

// TestExecNeedsApprovalThroughRuntime runs exec through the built runtime
// with the default config: a sandboxed command runs at once; one asking
// for the network waits for the owner's decision, which runs or refuses it.
func TestExecNeedsApprovalThroughRuntime(t *testing.T) {
	if !sandboxAvailable() {
		t.Skip("no OS sandbox on this machine")
	}
	cases := []struct {
		name     string
		decision approvals.Decision
		want     string
	}{
		{"allow once", approvals.AllowOnce, "approved-ran"},
		{"deny", approvals.Deny, "not approved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prov := llm.NewScripted([]llm.Turn{
				{ToolCalls: []llm.ToolCall{{ID: "e1", Name: "exec", Arguments: `{"command":"echo confined-ran"}`}}},
				{ToolCalls: []llm.ToolCall{{ID: "e2", Name: "exec", Arguments: `{"command":"echo approved-ran","network":true}`}}},
				{Content: "done"},
			})
			a, _ := newApp(t, false, prov)
			t.Cleanup(func() {
				// A failed test must not leave the turn waiting on the owner.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				a.Close(ctx)
			})
			if _, ok := a.Tools().Get("exec"); !ok {
				t.Fatal("exec not registered with the default config")
			}
			tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "local", Content: "go"})
			if err != nil {
				t.Fatal(err)
			}
			var pending []approvals.Request
			eventually(t, "an approval request", func() bool {
				pending, err = a.Approvals().List(context.Background(), approvals.ListOptions{})
				return err == nil && len(pending) == 1
			})
			r := pending[0]
			if r.Command != "echo approved-ran" || strings.Join(r.Grants, ",") != approvals.GrantNetwork || r.Dir != a.Workspace().Root() {
				t.Fatalf("request = %+v", r)
			}
			if r.Conversation != spine.ConversationKey("cli", "local") {
				t.Fatalf("conversation = %q", r.Conversation)
			}
			if !r.ExpiresAt.Equal(r.CreatedAt.Add(10 * time.Minute)) {
				t.Fatalf("expiry %s, created %s: want the default 10m ttl", r.ExpiresAt, r.CreatedAt)
			}
			operator := operatorOf(t, a)
			if _, err := a.Approvals().Decide(context.Background(), operator, r.ID, tc.decision); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Approvals().Decide(context.Background(), operator, r.ID, approvals.AllowOnce); !errors.Is(err, approvals.ErrResolved) {
				t.Fatalf("second decision: %v, want ErrResolved", err)
			}
			res, err := tk.Wait(context.Background())
			if err != nil || res.Err != nil {
				t.Fatal(err, res.Err)
			}
			reqs := prov.Requests()
			if len(reqs) != 3 {
				t.Fatalf("model called %d times", len(reqs))
			}
			if got := lastToolResult(t, prov); !strings.Contains(got, tc.want) {
				t.Fatalf("exec result %q, want %q", got, tc.want)
			}
			if err := a.FlushEvents(context.Background()); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			evs, _, err := a.Events().Tail(context.Background(), 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				kinds[e.Kind]++
			}
			if kinds[approvals.KindRequested] != 1 || kinds[approvals.KindResolved] != 1 {
				t.Fatalf("events %v: want one approval.requested and one approval.resolved", kinds)
			}
		})
	}
}

func sandboxAvailable() bool { return sandbox.Detect().Available() }

// Without an OS sandbox exec never runs silently unconfined: by default it
// refuses, and with tools.exec.unsandboxed=approve every command, even one
// asking nothing, waits for the owner with the "unsandboxed" grant.
func TestExecWithoutSandbox(t *testing.T) {
	none := sandbox.Mode{Kind: sandbox.KindNone, Reason: "test: no landlock"}
	t.Run("default is off", func(t *testing.T) {
		prov := llm.NewScripted([]llm.Turn{
			{ToolCalls: []llm.ToolCall{{ID: "e1", Name: "exec", Arguments: `{"command":"echo should-not-run"}`}}},
			{Content: "done"},
		})
		a, _ := newApp(t, false, prov, func(o *Options) { o.SandboxMode = &none })
		if a.SandboxMode().Available() {
			t.Fatal("override ignored")
		}
		turn(t, a, "go")
		if got := lastToolResult(t, prov); !strings.Contains(got, "exec is off") || strings.Contains(got, "should-not-run\n") {
			t.Fatalf("exec result %q, want refused as off", got)
		}
		if rs, _ := a.Approvals().List(context.Background(), approvals.ListOptions{All: true}); len(rs) != 0 {
			t.Fatalf("approval requested while exec is off: %+v", rs)
		}
	})
	t.Run("approve asks for every command", func(t *testing.T) {
		prov := llm.NewScripted([]llm.Turn{
			{ToolCalls: []llm.ToolCall{{ID: "e1", Name: "exec", Arguments: `{"command":"echo unconfined-ran"}`}}},
			{Content: "done"},
		})
		a, _ := newApp(t, false, prov, func(o *Options) {
			o.SandboxMode = &none
			o.Config.Tools.Exec.Unsandboxed = "approve"
		})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			a.Close(ctx)
		})
		tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "local", Content: "go"})
		if err != nil {
			t.Fatal(err)
		}
		var pending []approvals.Request
		eventually(t, "an approval request", func() bool {
			pending, err = a.Approvals().List(context.Background(), approvals.ListOptions{})
			return err == nil && len(pending) == 1
		})
		if g := strings.Join(pending[0].Grants, ","); g != approvals.GrantUnsandboxed {
			t.Fatalf("grants %q, want unsandboxed", g)
		}
		if _, err := a.Approvals().Decide(context.Background(), operatorOf(t, a), pending[0].ID, approvals.AllowOnce); err != nil {
			t.Fatal(err)
		}
		if res, err := tk.Wait(context.Background()); err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		if got := lastToolResult(t, prov); !strings.Contains(got, "unconfined-ran") {
			t.Fatalf("exec result %q", got)
		}
	})
}
