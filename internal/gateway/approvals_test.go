package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// The approvals methods over the real store and server: who may list and
// decide, and every refusal as a typed RPC error carrying the precise code.
func TestApprovalsMethods(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	as, err := auth.NewStore(ctx, db, clk)
	if err != nil {
		t.Fatal(err)
	}
	st, err := approvals.Open(ctx, db, approvals.Options{Clock: clk, Authority: approvals.NewAuthority(as)})
	if err != nil {
		t.Fatal(err)
	}
	srv := controlapi.NewServer(controlapi.Options{Auth: as, Clock: clk})
	RegisterApprovals(srv, st)
	sock := filepath.Join(dir, "raven.sock")
	ln, err := controlapi.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	tokens := map[string]string{}
	for name, mk := range map[string]func() (string, error){
		"operator": func() (string, error) { return as.Create(ctx, auth.RoleOperator, "op", false) },
		"device":   func() (string, error) { return as.Create(ctx, auth.RoleDevice, "phone", false) },
		"readonly": func() (string, error) { return as.Create(ctx, auth.RoleDevice, "wall", true) },
	} {
		if tokens[name], err = mk(); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(cmd string) approvals.Request {
		r, err := st.Create(ctx, approvals.Ask{Command: cmd, Dir: "/w", Grants: []string{approvals.GrantNetwork}, Conversation: "tui:main"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := ask("curl a")
	expiring := ask("curl b")
	clk.Advance(9 * time.Minute)
	b := ask("curl c")
	clk.Advance(2 * time.Minute) // expiring is past its 10m ttl, a too; b is not
	_ = a

	type decideCase struct {
		name, who, id string
		decision      approvals.Decision
		code          int
		data          string
	}
	cases := []decideCase{
		{"read-only device cannot decide", "readonly", b.ID, approvals.AllowOnce, controlapi.CodeForbidden, ""},
		{"device without Take Control", "device", b.ID, approvals.AllowOnce, controlapi.CodeForbidden, "forbidden"},
		{"unknown id", "operator", "nope", approvals.AllowOnce, controlapi.CodeNotFound, "not_found"},
		{"bad decision", "operator", b.ID, "maybe", controlapi.CodeInvalidParams, "invalid"},
		{"expired", "operator", expiring.ID, approvals.AllowOnce, controlapi.CodeConflict, "expired"},
		{"operator allows", "operator", b.ID, approvals.AllowAlways, 0, ""},
		{"answerable once", "operator", b.ID, approvals.Deny, controlapi.CodeConflict, "resolved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialToken(t, sock, tokens[tc.who])
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			defer ccancel()
			r, err := controlapi.Invoke(cctx, c, api.ApprovalsDecide, api.ApprovalsDecideParams{ID: tc.id, Decision: tc.decision})
			if tc.code == 0 {
				if err != nil || r.Status != approvals.StatusAllowed || r.DecidedBy != "op" {
					t.Fatalf("decide = %+v, %v", r, err)
				}
				return
			}
			var re *controlapi.RPCError
			if !errors.As(err, &re) || re.Code != tc.code {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
			if tc.data != "" {
				d, _ := re.Data.(map[string]any)
				if d["approvals_code"] != tc.data {
					t.Fatalf("data = %v, want approvals_code %q", re.Data, tc.data)
				}
			}
		})
	}
	// The device holding the conversation's Take Control may decide.
	d := ask("curl d")
	phone, err := as.Verify(ctx, tokens["device"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.TakeControl(ctx, phone, "tui:main", time.Hour); err != nil {
		t.Fatal(err)
	}
	pc := dialToken(t, sock, tokens["device"])
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	if r, err := controlapi.Invoke(pctx, pc, api.ApprovalsDecide, api.ApprovalsDecideParams{ID: d.ID, Decision: approvals.Deny}); err != nil || r.Status != approvals.StatusDenied {
		t.Fatalf("controller's decision = %+v, %v", r, err)
	}
	// A read-only device may list; the answered request is gone from the
	// pending list and shown with --all.
	c := dialToken(t, sock, tokens["readonly"])
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	pending, err := controlapi.Invoke(cctx, c, api.ApprovalsList, api.ApprovalsListParams{})
	if err != nil || pending.Approvals == nil || len(pending.Approvals) != 0 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	all, err := controlapi.Invoke(cctx, c, api.ApprovalsList, api.ApprovalsListParams{All: true})
	if err != nil || len(all.Approvals) != 4 {
		t.Fatalf("all = %+v, %v", all, err)
	}
	if ok, _ := st.Remembered(ctx, approvals.Ask{Command: "curl c", Dir: "/w", Grants: []string{approvals.GrantNetwork}}); !ok {
		t.Fatal("allow-always did not remember the exact command")
	}
}
