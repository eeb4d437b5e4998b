package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// runRaven runs the root command in-process with stdout and stderr merged.
func runRaven(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// runRavenIO runs the root command in-process with stdout and stderr apart.
func runRavenIO(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

const (
	modeGateway = "raven: via the gateway on "
	modeDirect  = "raven: no gateway running on "
)

// With no gateway, the CLI reads the database directly and says so (writes
// are refused: TestConversationsOffline).
func TestConversationsCLI(t *testing.T) {
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
	s, err := store.Ask(ctx, "tui:main", questions.NewQuestion{Question: "Tabs or spaces?", Options: []string{"tabs", "spaces"}, AllowText: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, errOut, err := runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", "tui:main", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.HasPrefix(errOut, modeDirect) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", errOut, modeDirect)
	}
	var snap questions.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil || snap.Request.RequestID != s.Request.RequestID {
		t.Fatalf("questions --json = %s (%v)", out, err)
	}
	out, _, _ = runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", "tui:main")
	if !strings.Contains(out, s.Request.Options[1].OptionID) || !strings.Contains(out, "raven conversations answer tui:main") {
		t.Fatalf("questions text = %s", out)
	}
}

// With a gateway running, the CLI is a thin client of its input_* methods:
// the answer emits input_resolved and the ANSWER continuation turn runs in
// the gateway. Refusals read and exit the same as in the direct mode.
func TestConversationsViaGateway(t *testing.T) {
	dir := t.TempDir()
	const conv = "tui:main"
	const continued = "Spaces it is; noted for this project."
	model := writeScript(t,
		map[string]any{"tool_calls": []map[string]any{{"name": "conversation_question",
			"arguments": map[string]any{"question": "Tabs or spaces?", "options": []string{"tabs", "spaces"}}}}},
		map[string]any{"content": "I left you a question about indentation."},
		map[string]any{"content": continued},
	)
	gw := startGatewayChild(t, dir, "--model", model)
	c := gw.dial(t)

	// The owner conversation the question binds to, owned by the operator
	// credential the gateway checks on every use.
	ctx := context.Background()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := questions.OpenStore(ctx, db, questions.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateConversation(ctx, questions.ConversationSpec{ID: conv, Kind: questions.KindOwner, Workspace: t.TempDir(),
		Owner: auth.OperatorName, OwnerGeneration: c.Principal().Generation}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// A scripted turn asks through the conversation_question tool.
	rpc(t, c, api.ChatSend, api.ChatSendParams{Conversation: conv, Text: "set up my editor"})
	var snap questions.Snapshot
	eventually(t, "the pending question", func() bool {
		out, errOut, err := runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", conv, "--json")
		if err != nil {
			t.Fatalf("questions: %v (%s)", err, errOut)
		}
		if !strings.HasPrefix(errOut, modeGateway) || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("stderr %q, want one line starting %q", errOut, modeGateway)
		}
		snap = questions.Snapshot{}
		return json.Unmarshal([]byte(out), &snap) == nil && snap.Status == questions.StatusPending && snap.Request != nil
	})
	if len(snap.Request.Options) != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	spaces, tabs := snap.Request.Options[1].OptionID, snap.Request.Options[0].OptionID
	rev := strconv.FormatInt(snap.Revision, 10)
	base := []string{"--data-dir", dir, "conversations", "answer", conv, snap.Request.RequestID, "--incarnation", snap.Incarnation, "--revision", rev}

	out, errOut, err := runRavenIO(t, "", append(base, "--option", spaces, "--json")...)
	if err != nil {
		t.Fatal(err, errOut)
	}
	if !strings.HasPrefix(errOut, modeGateway) {
		t.Errorf("answer stderr %q, want %q", errOut, modeGateway)
	}
	var rec questions.Receipt
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Status != questions.StatusAnswered || rec.RunID == "" ||
		rec.OptionID != spaces || rec.By != auth.OperatorName {
		t.Fatalf("answer = %s (%v)", out, err)
	}
	// The scripted turn can finish before the submission is recorded, and
	// the receipt then still says accepted; what matters is that it ran.
	if rec.Continuation == questions.RunFailed || rec.ContinuationError != "" {
		t.Errorf("continuation %q (%q), want it submitted", rec.Continuation, rec.ContinuationError)
	}

	// The continuation ran: its scripted reply is persisted, its run is
	// finished on the receipt, and the lifecycle events are in the log.
	eventually(t, "the continuation's reply", func() bool { return lastAssistant(t, dir, conv) == continued })
	eventually(t, "the run finished on the receipt", func() bool {
		out, _, err := runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", conv, "--request", rec.RequestID, "--json")
		var s questions.Snapshot
		return err == nil && json.Unmarshal([]byte(out), &s) == nil && s.Receipt != nil && s.Receipt.Continuation == questions.RunFinished
	})
	res := rpc(t, c, api.EventsTail, api.TailParams{AfterSeq: 0, Limit: 200})
	var kinds []string
	for _, e := range res.Events {
		if e.Conversation == conv && strings.HasPrefix(e.Kind, "input_") {
			kinds = append(kinds, e.Kind)
		}
	}
	if strings.Join(kinds, ",") != questions.EventInputRequested+","+questions.EventInputResolved {
		t.Errorf("question events %v, want input_requested, input_resolved", kinds)
	}

	out, _, err = runRavenIO(t, "", append(base, "--option", spaces)...)
	if err != nil || !strings.Contains(out, "original receipt") || !strings.Contains(out, rec.RunID) {
		t.Fatalf("duplicate = %s (%v)", out, err)
	}

	// Refusals: same exit code, code and message through the gateway and
	// directly on the database.
	refusals := []struct {
		name     string
		args     []string
		wantCode string
		wantExit int
	}{
		{"different answer to a consumed request", append(base, "--option", tabs), questions.CodeConflict, 3},
		{"cancel an answered request", []string{"--data-dir", dir, "conversations", "cancel-question", conv, snap.Request.RequestID,
			"--incarnation", snap.Incarnation, "--revision", rev}, questions.CodeConflict, 3},
		{"malformed incarnation", []string{"--data-dir", dir, "conversations", "answer", conv, snap.Request.RequestID,
			"--incarnation", "not-a-uuid", "--revision", rev, "--option", spaces}, questions.CodeInvalidParams, 2},
		{"unknown conversation", []string{"--data-dir", dir, "conversations", "questions", "tui:nobody"}, questions.CodeNotFound, 1},
	}
	viaGateway := make([]error, len(refusals))
	for i, r := range refusals {
		_, errOut, err := runRavenIO(t, "", r.args...)
		if !strings.HasPrefix(errOut, modeGateway) {
			t.Errorf("%s: stderr %q, want %q", r.name, errOut, modeGateway)
		}
		viaGateway[i] = err
	}
	gw.stop(t)
	for i, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			_, errOut, direct := runRavenIO(t, "", r.args...)
			if r.args[3] != "questions" {
				// A write with no gateway is refused before it is checked.
				if questions.CodeOf(viaGateway[i]) != r.wantCode || exitCode(viaGateway[i]) != r.wantExit {
					t.Errorf("gateway: %v: exit %d, want %q exit %d", viaGateway[i], exitCode(viaGateway[i]), r.wantCode, r.wantExit)
				}
				if !errors.Is(direct, errNoGatewayWrite) || exitCode(direct) != 1 {
					t.Errorf("direct write: %v (exit %d), want the no-gateway refusal, exit 1", direct, exitCode(direct))
				}
				return
			}
			if !strings.HasPrefix(errOut, modeDirect) {
				t.Errorf("stderr %q, want %q", errOut, modeDirect)
			}
			for mode, err := range map[string]error{"gateway": viaGateway[i], "direct": direct} {
				if questions.CodeOf(err) != r.wantCode || exitCode(err) != r.wantExit {
					t.Errorf("%s: %v: code %q exit %d, want %q exit %d", mode, err, questions.CodeOf(err), exitCode(err), r.wantCode, r.wantExit)
				}
			}
			if viaGateway[i] == nil || direct == nil || viaGateway[i].Error() != direct.Error() {
				t.Errorf("messages differ:\ngateway %v\ndirect  %v", viaGateway[i], direct)
			}
		})
	}
}

// A gateway that refuses the token is not "no gateway": the CLI fails
// rather than bypass it on the database.
func TestConversationsRefusedByGateway(t *testing.T) {
	dir := t.TempDir()
	gw := startGatewayChild(t, dir)
	tok := auth.TokenPrefix + strings.Repeat("A", 43) // well-formed, unknown
	if err := writeFile0600(filepath.Join(dir, "operator.token"), tok+"\n"); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runRavenIO(t, "", "--data-dir", dir, "conversations", "questions", "tui:main")
	if err == nil || exitCode(err) != 4 || !controlapi.IsCode(err, controlapi.CodeUnauthorized) {
		t.Fatalf("err %v (exit %d), want unauthorized, exit 4", err, exitCode(err))
	}
	if strings.Contains(errOut, modeDirect) {
		t.Errorf("fell back to the database beside a live gateway: %q", errOut)
	}
	gw.stop(t)
}

// rpc is a bounded control-API call that fails the test on error.
func rpc[Req, Resp any](t *testing.T, c *controlapi.Client, m api.Method[Req, Resp], req Req) Resp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := controlapi.Invoke(ctx, c, m, req)
	if err != nil {
		t.Fatalf("%s: %v", m.Name(), err)
	}
	return resp
}

// lastAssistant returns the newest assistant message of conv in raven.db.
func lastAssistant(t *testing.T, dataDir, conv string) string {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(dataDir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var content string
	err = db.QueryRow(`SELECT content FROM session_messages WHERE conversation = ? AND role = 'assistant' AND content != ''
		ORDER BY id DESC LIMIT 1`, conv).Scan(&content)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return content
}
