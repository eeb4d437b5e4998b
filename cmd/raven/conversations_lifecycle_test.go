package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// testControl is a real control-API server on the data dir's socket,
// serving the questions and conversations methods from a real store and
// real auth store, as the runtime registers them.
type testControl struct {
	clk    *clock.Fake
	auth   *auth.Store
	store  *questions.Store
	mu     sync.Mutex
	events []questions.InputResolvedEvent
	conts  []string
}

func startTestControl(t *testing.T, dir string) *testControl {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := config.NewPaths(dir)
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		t.Fatal(err)
	}
	tc := &testControl{clk: clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	if tc.auth, err = auth.NewStore(ctx, db, tc.clk); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.auth.EnsureOperatorToken(ctx, p.OperatorToken()); err != nil {
		t.Fatal(err)
	}
	tc.store, err = questions.OpenStore(ctx, db, questions.StoreOptions{
		Clock: tc.clk,
		Emit: func(_ context.Context, kind, _ string, payload any) error {
			if ev, ok := payload.(questions.InputResolvedEvent); ok {
				tc.mu.Lock()
				tc.events = append(tc.events, ev)
				tc.mu.Unlock()
			}
			return nil
		},
		Continue: func(_ context.Context, _, runID string, _ questions.OwnerAnswer) error {
			tc.mu.Lock()
			tc.conts = append(tc.conts, runID)
			tc.mu.Unlock()
			return nil
		},
		Authority: questions.Authority{Controllers: tc.auth, Credentials: tc.auth},
		Leases:    tc.auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	tc.auth.OnCredentialChange(tc.store.CredentialChanged)
	srv := controlapi.NewServer(controlapi.Options{Auth: tc.auth})
	gateway.RegisterQuestions(srv, tc.store)
	ln, err := controlapi.ListenUnix(p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })
	return tc
}

func (tc *testControl) resolved() []questions.InputResolvedEvent {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return append([]questions.InputResolvedEvent(nil), tc.events...)
}

// device creates a credential and writes its token file.
func (tc *testControl) device(t *testing.T, name string, readOnly bool) string {
	t.Helper()
	tok, err := tc.auth.Create(context.Background(), auth.RoleDevice, name, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".token")
	if err := writeFile0600(path, tok+"\n"); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantExit(t *testing.T, what string, err error, code int, contains string) {
	t.Helper()
	if exitCode(err) != code || (contains != "" && (err == nil || !strings.Contains(err.Error(), contains))) {
		t.Fatalf("%s: exit %d (%v), want %d containing %q", what, exitCode(err), err, code, contains)
	}
}

// The seed's story through the CLI and a real control-API server: an owner
// conversation is created, a question asked, a second device is refused
// until it takes control, answers, the duplicate returns the same receipt,
// a different answer is a conflict, a lease expires, reset rotates the
// incarnation, and revoking the owner credential cancels at once.
func TestConversationsLifecycleCLI(t *testing.T) {
	dir := t.TempDir()
	tc := startTestControl(t, dir)
	ctx := context.Background()
	ws := t.TempDir()
	run := func(args ...string) (string, error) {
		out, _, err := runRavenIO(t, "", append([]string{"--data-dir", dir, "conversations"}, args...)...)
		return out, err
	}

	out, err := run("new", "--workspace", ws, "--id", "tui:main")
	if err != nil || !strings.Contains(out, "can hold one") || !strings.Contains(out, ws) {
		t.Fatalf("new: %v\n%s", err, out)
	}
	_, err = run("new", "--id", "tui:x")
	wantExit(t, "new without --workspace", err, 2, "--workspace")
	_, err = run("new", "--workspace", ws, "--kind", "chatroom")
	wantExit(t, "new with a bad kind", err, 2, "chatroom")
	out, err = run("new", "--kind", "room", "--id", "room:lobby")
	if err != nil || !strings.Contains(out, "cannot hold one") {
		t.Fatalf("new room: %v\n%s", err, out)
	}
	_, err = run("new", "--workspace", ws, "--id", "tui:main")
	wantExit(t, "new over an existing one", err, 3, "exists")

	s, err := tc.store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Tabs or spaces?", Options: []string{"tabs", "spaces"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = run("list", "--json")
	var list questions.ListResult
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Conversations) != 2 {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = run("list")
	if err != nil || !strings.Contains(out, "pending "+s.Request.RequestID) || !strings.Contains(out, "room:lobby") {
		t.Fatalf("list text: %v\n%s", err, out)
	}

	phone := tc.device(t, "phone", false)
	viewer := tc.device(t, "viewer", true)
	rev := strconv.FormatInt(s.Revision, 10)
	answer := func(token string, option int) (string, error) {
		return run("--token-file", token, "answer", "tui:main", s.Request.RequestID, "--incarnation", s.Incarnation,
			"--revision", rev, "--option", s.Request.Options[option].OptionID, "--json")
	}
	_, err = answer(phone, 1)
	wantExit(t, "device answer without control", err, 4, "take control first")
	_, err = run("--token-file", viewer, "take", "tui:main")
	wantExit(t, "read-only device take", err, 4, "read-only device")
	if strings.Contains(err.Error(), "take control first") {
		t.Fatalf("a read-only device was told to take control: %v", err)
	}
	_, err = run("--token-file", phone, "take", "tui:nobody")
	wantExit(t, "take of an unknown conversation", err, 1, "no conversation")

	out, err = run("--token-file", phone, "take", "tui:main", "--ttl", "30s")
	if err != nil || !strings.Contains(out, "phone now controls tui:main") {
		t.Fatalf("take: %v\n%s", err, out)
	}
	out, err = run("show", "tui:main")
	if err != nil || !strings.Contains(out, "controller    phone") {
		t.Fatalf("show: %v\n%s", err, out)
	}
	out, err = answer(phone, 1)
	var rec questions.Receipt
	if err != nil || json.Unmarshal([]byte(out), &rec) != nil || rec.Status != questions.StatusAnswered || rec.By != "phone" {
		t.Fatalf("answer: %v\n%s", err, out)
	}
	out, err = answer(phone, 1)
	var dup questions.Receipt
	if err != nil || json.Unmarshal([]byte(out), &dup) != nil || dup.ReceiptID != rec.ReceiptID || dup.RunID != rec.RunID || !dup.Duplicate {
		t.Fatalf("duplicate: %v\n%s", err, out)
	}
	_, err = answer(phone, 0)
	wantExit(t, "different answer", err, 3, "read it again")

	// The lease ends: the device is no longer the controller.
	s, err = tc.store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Line length?", Options: []string{"80", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	rev = strconv.FormatInt(s.Revision, 10)
	tc.clk.Advance(31 * time.Second)
	_, err = answer(phone, 0)
	wantExit(t, "answer after the lease expired", err, 4, "take control first")
	if _, err := run("--token-file", phone, "take", "tui:main"); err != nil {
		t.Fatal(err)
	}
	if out, err := run("--token-file", phone, "release", "tui:main"); err != nil || !strings.Contains(out, "released control") {
		t.Fatalf("release: %v\n%s", err, out)
	}
	_, err = answer(phone, 0)
	wantExit(t, "answer after release", err, 4, "take control first")

	// Reset rotates the incarnation and cancels the pending question.
	out, err = run("reset", "tui:main", "--json")
	var v questions.ConversationView
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Incarnation == s.Incarnation || v.PendingRequest != "" {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	if ev := tc.resolved(); ev[len(ev)-1].RequestID != s.Request.RequestID || ev[len(ev)-1].Reason != questions.ReasonReset {
		t.Fatalf("resolved after reset: %+v", ev)
	}
	_, err = run("--token-file", viewer, "reset", "tui:main")
	wantExit(t, "read-only reset", err, 4, "")

	// Missing required flags are usage errors.
	_, err = run("answer", "tui:main", s.Request.RequestID, "--option", s.Request.Options[0].OptionID)
	wantExit(t, "answer without --incarnation/--revision", err, 2, "--incarnation, --revision")
	_, err = run("cancel-question", "tui:main", s.Request.RequestID, "--revision", "3")
	wantExit(t, "cancel without --incarnation", err, 2, "--incarnation")

	// Revoking the owner credential cancels its pending question at once.
	s, err = tc.store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Commit style?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.auth.Revoke(ctx, auth.OperatorName); err != nil {
		t.Fatal(err)
	}
	if ev := tc.resolved(); ev[len(ev)-1].RequestID != s.Request.RequestID || ev[len(ev)-1].Reason != questions.ReasonOwnerRevoked {
		t.Fatalf("resolved after revoke: %+v", ev)
	}
	_, err = run("list")
	wantExit(t, "list with a revoked token", err, 4, "")
}

// With no gateway: writes are refused with exit 1 and change nothing (the
// question stays pending, no event); reads work on the database; reads on a
// data dir with no database create nothing.
func TestConversationsOffline(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := questions.OpenStore(ctx, db, questions.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateConversation(ctx, questions.ConversationSpec{ID: "tui:main", Kind: questions.KindOwner, Workspace: t.TempDir(), Owner: "local"}); err != nil {
		t.Fatal(err)
	}
	s, err := store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Tabs or spaces?", Options: []string{"tabs", "spaces"}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	rev := strconv.FormatInt(s.Revision, 10)
	writes := [][]string{
		{"answer", "tui:main", s.Request.RequestID, "--incarnation", s.Incarnation, "--revision", rev, "--option", s.Request.Options[0].OptionID},
		{"cancel-question", "tui:main", s.Request.RequestID, "--incarnation", s.Incarnation, "--revision", rev},
		{"reset", "tui:main"}, {"take", "tui:main"}, {"release", "tui:main"}, {"new", "--workspace", t.TempDir()},
	}
	for _, w := range writes {
		_, errOut, err := runRavenIO(t, "", append([]string{"--data-dir", dir, "conversations"}, w...)...)
		if exitCode(err) != 1 || !errors.Is(err, errNoGatewayWrite) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("%v offline: exit %d (%v)", w, exitCode(err), err)
		}
		if strings.Contains(errOut, modeDirect) {
			t.Fatalf("%v offline claimed to use the database: %q", w, errOut)
		}
	}
	out, _, err := runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", "tui:main", "--json")
	var snap questions.Snapshot
	if err != nil || json.Unmarshal([]byte(out), &snap) != nil || snap.Status != questions.StatusPending || snap.Revision != s.Revision {
		t.Fatalf("question after refused writes: %v\n%s", err, out)
	}
	out, _, err = runRavenIO(t, "", "--data-dir", dir, "conversations", "show", "tui:main")
	if err != nil || !strings.Contains(out, "pending       "+s.Request.RequestID) {
		t.Fatalf("show offline: %v\n%s", err, out)
	}

	empty := filepath.Join(t.TempDir(), "nothing-here")
	out, _, err = runRavenIO(t, "", "--data-dir", empty, "conversations", "list")
	if err != nil || !strings.Contains(out, "no conversations") {
		t.Fatalf("list on an empty data dir: %v\n%s", err, out)
	}
	_, _, err = runRavenIO(t, "", "--data-dir", empty, "conversations", "show", "tui:main")
	wantExit(t, "show on an empty data dir", err, 1, "no database")
	_, _, err = runRavenIO(t, "", "--data-dir", empty, "conversations", "questions", "tui:main")
	wantExit(t, "questions on an empty data dir", err, 1, "no database")
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read created %s (%v)", empty, err)
	}
}

func TestConversationsHelpDocumentsExitCodes(t *testing.T) {
	for _, sub := range []string{"", "list", "answer", "take"} {
		args := []string{"conversations"}
		if sub != "" {
			args = append(args, sub)
		}
		out, err := runRaven(t, "", append(args, "--help")...)
		if err != nil || !strings.Contains(out, "3 conflict") || !strings.Contains(out, "4 not authorised") || !strings.Contains(out, "2 usage") {
			t.Fatalf("%v --help: %v\n%s", args, err, out)
		}
	}
}

// The native seat over the control API, as `raven chat --native CONV`
// claims it: the pending question is cancelled with its event, the
// conversation shows the seat and holds no question until it is released;
// a device may not claim it.
func TestConversationsNativeSeat(t *testing.T) {
	dir := t.TempDir()
	tc := startTestControl(t, dir)
	ctx := context.Background()
	p, _ := config.NewPaths(dir)
	run := func(args ...string) (string, error) {
		out, _, err := runRavenIO(t, "", append([]string{"--data-dir", dir, "conversations"}, args...)...)
		return out, err
	}
	if _, err := run("new", "--workspace", t.TempDir(), "--id", "tui:n"); err != nil {
		t.Fatal(err)
	}
	s, err := tc.store.Ask(ctx, "tui:n", questions.NewQuestion{Question: "Name the branch?"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := auth.ReadTokenFile(p.OperatorToken())
	if err != nil {
		t.Fatal(err)
	}
	c, err := controlapi.Dial(ctx, p.Socket(), tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res questions.NativeResult
	rpc(t, c, api.ConversationsNative.Name(), questions.NativeParams{Conversation: "tui:n", Seat: "chat:4242"}, &res)
	if res.NativeOwner != "chat:4242" || res.CanHoldQuestion {
		t.Fatalf("claim = %+v", res)
	}
	if ev := tc.resolved(); len(ev) != 1 || ev[0].RequestID != s.Request.RequestID || ev[0].Reason != questions.ReasonNativeTakeover {
		t.Fatalf("resolved = %+v", ev)
	}
	out, err := run("show", "tui:n")
	if err != nil || !strings.Contains(out, "native seat   chat:4242") || !strings.Contains(out, "cannot hold one (native_owner)") {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if _, err := tc.store.Ask(ctx, "tui:n", questions.NewQuestion{Question: "again?"}); questions.CodeOf(err) != questions.CodeUnavailable {
		t.Fatalf("ask under a native seat: %v", err)
	}

	phone := tc.device(t, "phone", false)
	ptok, _ := auth.ReadTokenFile(phone)
	pc, err := controlapi.Dial(ctx, p.Socket(), ptok)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.Call(ctx, api.ConversationsNative.Name(), questions.NativeParams{Conversation: "tui:n", Seat: "x"}, nil); !controlapi.IsCode(err, controlapi.CodeForbidden) {
		t.Fatalf("device claim: %v", err)
	}

	rpc(t, c, api.ConversationsNative.Name(), questions.NativeParams{Conversation: "tui:n", Seat: "chat:4242", Release: true}, &res)
	if out, err := run("show", "tui:n"); err != nil || !strings.Contains(out, "can hold one") {
		t.Fatalf("show after release: %v\n%s", err, out)
	}
}

// `raven auth revoke` and `rotate` work on the database directly; the owner
// question bound to the credential is cancelled by the command itself, with
// its input_resolved event in the event log, not on a later read.
func TestAuthChangeCancelsOwnerQuestionAtOnce(t *testing.T) {
	for _, verb := range []string{"revoke", "rotate"} {
		t.Run(verb, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			p, _ := config.NewPaths(dir)
			db, err := sqlitedb.Open(p.DB())
			if err != nil {
				t.Fatal(err)
			}
			as, _ := auth.NewStore(ctx, db, clock.Real())
			tok, _ := as.Create(ctx, auth.RoleOperator, "alice", false)
			alice, _ := as.Verify(ctx, tok)
			qs, err := questions.OpenStore(ctx, db, questions.StoreOptions{Authority: questions.Authority{Credentials: as}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := qs.OpenOwner(ctx, alice, "tui:a", t.TempDir()); err != nil {
				t.Fatal(err)
			}
			s, err := qs.Ask(ctx, "tui:a", questions.NewQuestion{Question: "Which shell?"})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()

			if out, err := runRaven(t, "", "--data-dir", dir, "auth", verb, "alice"); err != nil {
				t.Fatalf("auth %s: %v\n%s", verb, err, out)
			}

			db, err = sqlitedb.Open(p.DB())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var status, reason string
			if err := db.QueryRow(`SELECT status, reason FROM questions WHERE request_id = ?`, s.Request.RequestID).Scan(&status, &reason); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"revoke": questions.ReasonOwnerRevoked, "rotate": questions.ReasonCredentialRotated}[verb]
			if status != questions.StatusCancelled || reason != want {
				t.Fatalf("question %s (%s), want cancelled (%s)", status, reason, want)
			}
			events, err := eventlog.Open(ctx, db, eventlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer events.Close()
			evs, _, err := events.Tail(ctx, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				if e.Kind == questions.EventInputResolved {
					var ev questions.InputResolvedEvent
					_ = json.Unmarshal(e.Payload, &ev)
					got = append(got, ev.RequestID+"/"+ev.Reason)
				}
			}
			if len(got) != 1 || got[0] != s.Request.RequestID+"/"+want {
				t.Fatalf("input_resolved events %v", got)
			}
		})
	}
}
