package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
)

// A gateway-side exec waits on an approval; `raven approvals` lists it,
// approves it once, and the command runs; deny refuses the next one.
func TestApprovalsCLIAnswersWaitingExec(t *testing.T) {
	if !sandbox.Detect().Available() {
		t.Skip("no sandbox")
	}
	dir := t.TempDir()
	ctx := context.Background()
	out, err := runRaven(t, "", "--data-dir", dir, "approvals", "list")
	if err != nil || out != "no pending approval requests\n" {
		t.Fatalf("empty list: %q %v", out, err)
	}
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := approvals.Open(ctx, db, approvals.Options{Authority: approvals.OperatorOnly{}, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(filepath.Join(dir, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := tools.NewExecWith(tools.ExecOptions{WS: ws, DataDir: dir, Approver: st})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(ex)
	type res struct {
		out string
		err error
	}
	start := func(cmd string) chan res {
		ch := make(chan res, 1)
		go func() {
			b, _ := json.Marshal(map[string]any{"command": cmd, "network": true})
			o, err := reg.Run(ctx, llm.ToolCall{Name: "exec", Arguments: string(b)})
			ch <- res{o, err}
		}()
		return ch
	}
	pending := func() approvals.Request {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			out, err := runRaven(t, "", "--data-dir", dir, "approvals", "list", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var rs []approvals.Request
			if err := json.Unmarshal([]byte(out), &rs); err != nil {
				t.Fatalf("list --json: %v: %q", err, out)
			}
			if len(rs) == 1 {
				return rs[0]
			}
		}
		t.Fatal("no pending request listed")
		return approvals.Request{}
	}
	ch := start("echo ran-once")
	r := pending()
	if r.Command != "echo ran-once" || r.Grants[0] != "network" {
		t.Fatalf("listed %+v", r)
	}
	out, _ = runRaven(t, "", "--data-dir", dir, "approvals", "list")
	if !strings.Contains(out, r.ID) || !strings.Contains(out, "needs network") || !strings.Contains(out, "command: echo ran-once") {
		t.Fatalf("list text: %q", out)
	}
	if _, err := runRaven(t, "", "--data-dir", dir, "approvals", "approve", r.ID); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got.err != nil || !strings.Contains(got.out, "ran-once") {
		t.Fatalf("approved run: %q %v", got.out, got.err)
	}
	if _, err := runRaven(t, "", "--data-dir", dir, "approvals", "deny", r.ID); exitCode(err) != 2 || !errors.Is(err, approvals.ErrResolved) {
		t.Fatalf("second answer: %v", err)
	}
	ch = start("echo never")
	r = pending()
	if _, err := runRaven(t, "", "--data-dir", dir, "approvals", "deny", r.ID); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; !strings.Contains(got.out+errString(got.err), "denied") || strings.Contains(got.out, "never") {
		t.Fatalf("denied run: %q %v", got.out, got.err)
	}
	if _, err := runRaven(t, "", "--data-dir", dir, "approvals", "approve", "no-such-id"); exitCode(err) != 2 {
		t.Fatalf("unknown id: %v", err)
	}
	out, _ = runRaven(t, "", "--data-dir", dir, "approvals", "list", "--all")
	if !strings.Contains(out, "decided: deny by operator") || !strings.Contains(out, "decided: allow-once by operator") {
		t.Fatalf("list --all: %q", out)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
