package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/questions"
)

// credential creates a credential with `raven auth create` and writes its
// token to a file in HOME, returning the file.
func credential(t *testing.T, e *Env, name string, flags ...string) string {
	t.Helper()
	args := append([]string{"auth", "create", "--name", name}, flags...)
	tok := strings.TrimSpace(e.MustRun(args...).Stdout)
	path := filepath.Join(e.Home, name+".token")
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// askSettled is askOnce that also waits until the turn consumed both its
// scripted replies, so the next script cannot be taken by this turn.
func askSettled(t *testing.T, e *Env, conv, question string) questions.Snapshot {
	t.Helper()
	snap := askOnce(t, e, conv, question)
	e.Eventually(20*time.Second, "scripted replies consumed", func() bool { return e.Model.Queued() == 0 })
	return snap
}

// ownerConv makes an owner conversation on a fresh worktree with `raven
// conversations new`, as the credential in tokenFile (the data dir's
// operator when "").
func ownerConv(t *testing.T, e *Env, conv, tokenFile string) {
	t.Helper()
	args := []string{"conversations", "new", "--workspace", linkedWorktree(t), "--id", conv}
	if tokenFile != "" {
		args = append(args, "--token-file", tokenFile)
	}
	wantCode(t, e.Run(args...), 0, "new "+conv)
}

func wantRefusal(t *testing.T, r Result, code int, advice, what string) {
	t.Helper()
	wantCode(t, r, code, what)
	if !strings.Contains(r.Stderr, advice) {
		t.Fatalf("%s: refusal lacks %q:\n%s", what, advice, r)
	}
}

// resolvedOf decodes an input_resolved event for request id, or reports false.
func resolvedOf(ev eventlog.Event, id string) (questions.InputResolvedEvent, bool) {
	var p questions.InputResolvedEvent
	if ev.Kind != questions.EventInputResolved || json.Unmarshal(ev.Payload, &p) != nil {
		return p, false
	}
	return p, p.RequestID == id
}

// A device's Take Control lease carries its answers only while it lives:
// accepted inside the lease, refused with "take control first" (exit 4)
// once it expired, and at once after an explicit release. The lease is
// the smallest the code allows (auth.MinLeaseTTL).
func TestLeaseExpiryAndReleaseEndDeviceAuthority(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const live, late = "tui:lease-live", "tui:lease-late"
	ownerConv(t, e, live, "")
	ownerConv(t, e, late, "")
	phone := credential(t, e, "phone", "--role", "device")
	qLive := askSettled(t, e, live, "Tabs or spaces?")
	qLate := askSettled(t, e, late, "Morning or evening reviews?")

	ttl := auth.MinLeaseTTL.String()
	wantCode(t, e.Run("conversations", "take", live, "--ttl", ttl, "--token-file", phone), 0, "take live")
	wantCode(t, e.Run("conversations", "take", late, "--ttl", ttl, "--token-file", phone), 0, "take late")
	taken := time.Now()
	wantCode(t, e.Run(answerArgs(live, qLive, qLive.Request.Options[0].OptionID, "--token-file", phone)...), 0, "answer inside the lease")
	if time.Since(taken) >= auth.MinLeaseTTL {
		t.Skip("the machine is too slow to answer inside the shortest lease")
	}

	// Wait for the lease to lapse as the gateway sees it, then answer.
	e.Eventually(auth.MinLeaseTTL+15*time.Second, "lease expiry", func() bool {
		var v questions.ConversationView
		r := e.Run("conversations", "show", late, "--json")
		r.JSON(t, &v)
		return v.Controller == ""
	})
	wantRefusal(t, e.Run(answerArgs(late, qLate, qLate.Request.Options[0].OptionID, "--token-file", phone)...), 4,
		"take control first", "answer after the lease expired")

	// Release ends it at once: take again (default TTL), release, answer.
	wantCode(t, e.Run("conversations", "take", late, "--token-file", phone), 0, "take again")
	wantCode(t, e.Run("conversations", "release", late, "--token-file", phone), 0, "release")
	wantRefusal(t, e.Run(answerArgs(late, qLate, qLate.Request.Options[0].OptionID, "--token-file", phone)...), 4,
		"take control first", "answer after release")
	var still questions.Snapshot
	e.MustRun("conversations", "questions", late, "--json").JSON(t, &still)
	if still.Status != questions.StatusPending || still.Request.RequestID != qLate.Request.RequestID {
		t.Fatalf("a refused answer changed the question: %+v", still)
	}
}

// Who may answer, through the CLI with real credentials: a read-only
// device and a captain never (exit 4), not even after trying take; a
// control device only while it holds Take Control; the operator always.
func TestAuthorityMatrixThroughCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const devConv, opConv = "tui:matrix-dev", "tui:matrix-op"
	ownerConv(t, e, devConv, "")
	ownerConv(t, e, opConv, "")
	ro := credential(t, e, "tablet", "--role", "device", "--read-only")
	captain := credential(t, e, "captain", "--role", "captain")
	phone := credential(t, e, "phone", "--role", "device")
	qDev := askSettled(t, e, devConv, "Squash or merge commits?")
	qOp := askSettled(t, e, opConv, "Verbose or terse logs?")

	for _, c := range []struct{ name, tok string }{{"read-only device", ro}, {"captain", captain}} {
		for _, conv := range []struct {
			id   string
			snap questions.Snapshot
		}{{devConv, qDev}, {opConv, qOp}} {
			wantCode(t, e.Run(answerArgs(conv.id, conv.snap, conv.snap.Request.Options[0].OptionID, "--token-file", c.tok)...), 4, c.name+" answer")
			wantCode(t, e.Run("conversations", "take", conv.id, "--token-file", c.tok), 4, c.name+" take")
			wantCode(t, e.Run(answerArgs(conv.id, conv.snap, conv.snap.Request.Options[0].OptionID, "--token-file", c.tok)...), 4, c.name+" answer after take")
		}
	}
	wantRefusal(t, e.Run(answerArgs(devConv, qDev, qDev.Request.Options[0].OptionID, "--token-file", phone)...), 4,
		"take control first", "control device without the lease")
	wantCode(t, e.Run("conversations", "take", devConv, "--token-file", phone), 0, "control device take")
	wantCode(t, e.Run(answerArgs(devConv, qDev, qDev.Request.Options[1].OptionID, "--token-file", phone)...), 0, "control device holding the lease")
	wantCode(t, e.Run(answerArgs(opConv, qOp, qOp.Request.Options[1].OptionID)...), 0, "operator")
	for _, c := range []struct {
		conv string
		want string
	}{{devConv, qDev.Request.RequestID}, {opConv, qOp.Request.RequestID}} {
		var s questions.Snapshot
		e.MustRun("conversations", "questions", c.conv, "--request", c.want, "--json").JSON(t, &s)
		if s.Receipt == nil || s.Receipt.Status != "answered" {
			t.Fatalf("%s: not answered: %+v", c.conv, s.Receipt)
		}
	}
}

// Conversations of every other kind, made with `raven conversations new
// --kind K`, can never hold a question: the tool is not offered to the
// model, and a call the model forges anyway gets a clear tool error and
// leaves nothing pending.
func TestExcludedKindsNeverHoldAQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	for _, kind := range []questions.Kind{questions.KindRoom, questions.KindGlobal, questions.KindSide, questions.KindNative} {
		t.Run(string(kind), func(t *testing.T) {
			conv := "tui:excl-" + string(kind)
			wantCode(t, e.Run("conversations", "new", "--kind", string(kind), "--id", conv), 0, "new --kind "+string(kind))
			var v questions.ConversationView
			e.MustRun("conversations", "show", conv, "--json").JSON(t, &v)
			if v.CanHoldQuestion {
				t.Fatalf("%s conversation says it can hold a question: %+v", kind, v)
			}

			e.Model.Enqueue(fakeopenai.Call("conversation_question", map[string]any{"question": "Forged?", "options": []string{"a", "b"}}),
				fakeopenai.Text("forged done."))
			text := "forge a question in " + conv
			first := ownerTurn(t, e, conv, text)
			if first.HasTool("conversation_question") {
				t.Fatalf("conversation_question offered in a %s conversation: %v", kind, first.ToolNames())
			}
			var leg fakeopenai.Request
			e.Eventually(20*time.Second, "second leg after the forged call", func() bool {
				for _, r := range e.Model.Requests() {
					if r.LastUser() == text && r.Last().Role == "tool" {
						leg = r
						return true
					}
				}
				return false
			})
			want := "a " + string(kind) + " conversation cannot hold a question"
			if res := leg.Last().Content; !strings.HasPrefix(res, "error:") || !strings.Contains(res, want) {
				t.Fatalf("forged call's tool result is not the clear refusal %q: %q", want, res)
			}
			t.Logf("%s forged call result: %s", kind, leg.Last().Content)
			var s questions.Snapshot
			if r := e.Run("conversations", "questions", conv, "--json"); r.Code == 0 {
				r.JSON(t, &s)
				if s.Status == questions.StatusPending {
					t.Fatalf("a %s conversation holds a question: %+v", kind, s)
				}
			}
		})
	}
}

// Revoking or rotating the owner credential while a gateway runs goes
// through its control API (auth.revoke, auth.rotate): the pending question
// is cancelled at once and its input_resolved event reaches a live
// events.subscribe client without any further read or append.
func TestOwnerRevocationThroughGatewayCancelsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	cases := []struct {
		verb, reason string
	}{
		{"revoke", questions.ReasonOwnerRevoked},
		{"rotate", questions.ReasonCredentialRotated},
	}
	for _, c := range cases {
		t.Run(c.verb, func(t *testing.T) {
			name := "laptop-" + c.verb
			conv := "tui:revoc-" + c.verb
			tok := credential(t, e, name, "--role", "operator")
			ownerConv(t, e, conv, tok)
			var v questions.ConversationView
			e.MustRun("conversations", "show", conv, "--json").JSON(t, &v)
			if v.Owner != name {
				t.Fatalf("owner of %s is %q, want %q", conv, v.Owner, name)
			}
			snap := askSettled(t, e, conv, "Which shell do you prefer ("+c.verb+")?")
			id := snap.Request.RequestID
			sub := e.Subscribe()
			sub.WaitFor(10*time.Second, "input_requested backfill", func(ev eventlog.Event) bool {
				return ev.Kind == questions.EventInputRequested && strings.Contains(string(ev.Payload), id)
			})
			r := e.MustRun("auth", c.verb, name)
			if !strings.Contains(r.Stderr, "via the gateway") {
				t.Fatalf("auth %s did not go through the running gateway:\n%s", c.verb, r)
			}
			// Nothing else happens on the gateway: the event must be pushed.
			ev := sub.WaitFor(5*time.Second, "input_resolved pushed live", func(ev eventlog.Event) bool {
				_, ok := resolvedOf(ev, id)
				return ok
			})
			got, _ := resolvedOf(ev, id)
			if got.Status != "cancelled" || got.Reason != c.reason {
				t.Fatalf("input_resolved after auth %s: %+v, want cancelled/%s", c.verb, got, c.reason)
			}
		})
	}
}

// With no gateway, `raven auth revoke` works on the database and still
// cancels the owner's question at once with its event in the log: a
// gateway started afterwards shows the revocation, not a restart.
func TestOwnerRevocationWithoutGatewayCancels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	const conv = "tui:revoc-offline"
	tok := credential(t, e, "laptop", "--role", "operator")
	ownerConv(t, e, conv, tok)
	snap := askSettled(t, e, conv, "Rebase or merge?")
	id := snap.Request.RequestID
	g.Stop()

	r := e.MustRun("auth", "revoke", "laptop")
	if strings.Contains(r.Stderr, "via the gateway") {
		t.Fatalf("no gateway runs, yet auth revoke says it used one:\n%s", r)
	}
	var s questions.Snapshot
	e.MustRun("conversations", "questions", conv, "--request", id, "--json").JSON(t, &s)
	if s.Receipt == nil || s.Receipt.Status != "cancelled" || s.Receipt.Reason != questions.ReasonOwnerRevoked {
		t.Fatalf("offline revoke did not cancel the question: %+v", s.Receipt)
	}

	g = e.StartGateway()
	defer g.Stop()
	ev := e.Subscribe().WaitFor(10*time.Second, "input_resolved in the log", func(ev eventlog.Event) bool {
		_, ok := resolvedOf(ev, id)
		return ok
	})
	if got, _ := resolvedOf(ev, id); got.Reason != questions.ReasonOwnerRevoked {
		t.Fatalf("logged input_resolved: %+v, want owner_revoked", got)
	}
}

// nativeSeat starts `raven chat --native conv` (the native-seat REPL)
// beside the gateway and returns once it has claimed the seat.
func nativeSeat(t *testing.T, e *Env, conv string) *Proc {
	t.Helper()
	p := e.Start("chat", "--native", conv)
	p.WaitStderr(20*time.Second, "Native seat of "+conv+" claimed")
	return p
}

func closeSeat(t *testing.T, p *Proc) {
	t.Helper()
	p.CloseStdin()
	if r := p.Wait(20 * time.Second); r.Code != 0 {
		t.Fatalf("native seat REPL exit %d:\n%s", r.Code, r)
	}
}

// The native seat's takeover comes before any answer: started beside the
// gateway, `raven chat --native CONV` cancels the pending question
// (native_takeover) and an answer submitted right after is refused; while
// the seat is held no new question can be asked there.
func TestNativeTakeoverCancelsBeforeAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const conv = "tui:native-first"
	ownerConv(t, e, conv, "")
	snap := askSettled(t, e, conv, "Light or dark theme?")
	seat := nativeSeat(t, e, conv)
	var got questions.Snapshot
	e.MustRun("conversations", "questions", conv, "--request", snap.Request.RequestID, "--json").JSON(t, &got)
	if got.Receipt == nil || got.Receipt.Status != "cancelled" || got.Receipt.Reason != questions.ReasonNativeTakeover {
		t.Fatalf("native takeover did not cancel the question: %+v", got.Receipt)
	}
	wantCode(t, e.Run(answerArgs(conv, snap, snap.Request.Options[0].OptionID)...), 3, "answer after the native takeover")
	var v questions.ConversationView
	e.MustRun("conversations", "show", conv, "--json").JSON(t, &v)
	if v.NativeOwner == "" || v.CanHoldQuestion {
		t.Fatalf("seat held, yet the conversation reads %+v", v)
	}
	closeSeat(t, seat)
}

// An answer accepted just before the takeover whose continuation has not
// started is failed, never run. The continuation is held back behind a
// turn of the same conversation whose model call the fake keeps open
// (Reply.Wait); the seat is claimed meanwhile, and the fake server must
// never receive the continuation's request.
func TestNativeTakeoverStopsQueuedContinuation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const conv = "tui:native-queued"
	ownerConv(t, e, conv, "")
	snap := askSettled(t, e, conv, "Which pager do you like?")

	hold := make(chan struct{})
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
	e.Model.Enqueue(fakeopenai.Reply{Text: "held turn done.", Wait: hold})
	ownerTurn(t, e, conv, "a long turn")

	ans := e.Run(answerArgs(conv, snap, snap.Request.Options[0].OptionID)...)
	wantCode(t, ans, 0, "answer while a turn runs")
	var rc questions.Receipt
	ans.JSON(t, &rc)
	seat := nativeSeat(t, e, conv)
	close(hold)

	e.Eventually(20*time.Second, "continuation settled", func() bool {
		var s questions.Snapshot
		e.MustRun("conversations", "questions", conv, "--request", snap.Request.RequestID, "--json").JSON(t, &s)
		rc = *s.Receipt
		return rc.Continuation != "accepted" && rc.Continuation != "submitted"
	})
	for _, r := range e.Model.Requests() {
		if strings.Contains(r.LastUser(), "The owner answered your question") {
			t.Fatalf("the continuation ran after the native takeover: %q (receipt %+v)", r.LastUser(), rc)
		}
	}
	if rc.Continuation != "failed" || !strings.Contains(rc.ContinuationError, "native takeover") {
		t.Fatalf("continuation after the takeover: %+v, want failed by the native takeover", rc)
	}
	closeSeat(t, seat)
}

// auth.revoke and auth.rotate are the operator's alone: a control device
// on the control socket is refused (forbidden) and the credential stays.
func TestAuthMethodsOperatorOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	phone := credential(t, e, "phone", "--role", "device")
	credential(t, e, "laptop", "--role", "operator")
	tok, err := auth.ReadTokenFile(phone)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := controlapi.Dial(ctx, e.Path("raven.sock"), tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := controlapi.Invoke(ctx, c, api.AuthRevoke, api.AuthNameParams{Name: "laptop"}); !controlapi.IsCode(err, controlapi.CodeForbidden) {
		t.Fatalf("device auth.revoke: %v, want forbidden", err)
	}
	if _, err := controlapi.Invoke(ctx, c, api.AuthRotate, api.AuthNameParams{Name: "laptop"}); !controlapi.IsCode(err, controlapi.CodeForbidden) {
		t.Fatalf("device auth.rotate: %v, want forbidden", err)
	}
	wantCode(t, e.Run("auth", "revoke", "nobody"), 2, "revoke an unknown credential through the gateway")
	var creds []auth.Credential
	e.MustRun("auth", "list", "--json").JSON(t, &creds)
	for _, cr := range creds {
		if cr.Name == "laptop" && (cr.Revoked() || cr.Generation != 1) {
			t.Fatalf("a refused call changed the credential: %+v", cr)
		}
	}
}
