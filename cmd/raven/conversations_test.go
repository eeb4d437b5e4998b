package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

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

	out, err := runRaven(t, "", "--data-dir", dir, "conversations", "questions", "tui:main", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var snap questions.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil || snap.Request.RequestID != s.Request.RequestID {
		t.Fatalf("questions --json = %s (%v)", out, err)
	}
	out, _ = runRaven(t, "", "--data-dir", dir, "conversations", "questions", "tui:main")
	if !strings.Contains(out, s.Request.Options[1].OptionID) || !strings.Contains(out, "raven conversations answer tui:main") {
		t.Fatalf("questions text = %s", out)
	}
	rev := strconv.FormatInt(snap.Revision, 10)
	base := []string{"--data-dir", dir, "conversations", "answer", "tui:main", s.Request.RequestID, "--incarnation", snap.Incarnation, "--revision", rev}

	_, err = runRaven(t, "", append(base, "--option", s.Request.Options[0].OptionID, "--text", "x")...)
	if exitCode(err) != 2 {
		t.Fatalf("two answer forms: exit %d (%v)", exitCode(err), err)
	}
	out, err = runRaven(t, "spaces, 4 wide\n", append(base, "--stdin", "--json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var rec questions.Receipt
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Status != questions.StatusAnswered || rec.RunID == "" || rec.Text != "spaces, 4 wide" {
		t.Fatalf("answer = %s (%v)", out, err)
	}
	out, err = runRaven(t, "spaces, 4 wide", append(base, "--stdin")...)
	if err != nil || !strings.Contains(out, "original receipt") || !strings.Contains(out, rec.RunID) {
		t.Fatalf("duplicate = %s (%v)", out, err)
	}
	_, err = runRaven(t, "", append(base, "--option", s.Request.Options[0].OptionID)...)
	if exitCode(err) != 1 || questions.CodeOf(err) != questions.CodeConflict {
		t.Fatalf("conflicting answer: %v", err)
	}
	_, err = runRaven(t, "", "--data-dir", dir, "conversations", "cancel-question", "tui:main", s.Request.RequestID, "--incarnation", snap.Incarnation, "--revision", rev)
	if questions.CodeOf(err) != questions.CodeConflict {
		t.Fatalf("cancel answered question: %v", err)
	}
}
