package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
)

// dataDir lays out raven's data dir: secrets beside the workspace.
func dataDir(t *testing.T) (data string, ws *tools.Workspace) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "home", ".raven")
	ws, err := tools.NewWorkspace(filepath.Join(data, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"operator.token": "tok-SECRET", "config.json": `{"model":"x","key":"sk-SECRET"}`} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return data, ws
}

func needSandbox(t *testing.T) {
	t.Helper()
	if m := sandbox.Detect(); !m.Available() {
		t.Skipf("no sandbox: %s", m)
	}
}

// defaultExec is the exec tool exactly as the gateway builds it today.
func defaultExec(t *testing.T) (*tools.Registry, string, *tools.Workspace) {
	t.Helper()
	needSandbox(t)
	data, ws := dataDir(t)
	e, err := tools.NewExec(ws, 20*time.Second, 16<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tools.NewRegistry(e), data, ws
}

func run(r *tools.Registry, ctx context.Context, args map[string]any) (string, error) {
	b, _ := json.Marshal(args)
	return r.Run(ctx, llm.ToolCall{Name: "exec", Arguments: string(b)})
}

func TestExecCannotReadDataDir(t *testing.T) {
	r, data, _ := defaultExec(t)
	for _, cmd := range []string{
		"cat " + filepath.Join(data, "operator.token"),
		"cat ../operator.token",
		"cat ../config.json",
		"tar cf - .. 2>/dev/null | strings | grep SECRET",
		"grep -r SECRET .. 2>/dev/null",
	} {
		out, _ := run(r, context.Background(), map[string]any{"command": cmd})
		if strings.Contains(out, "SECRET") {
			t.Errorf("%q read a secret: %q", cmd, out)
		}
	}
}

func TestExecCannotWriteOutsideWorkspace(t *testing.T) {
	r, data, ws := defaultExec(t)
	outside := filepath.Join(filepath.Dir(data), "outside.txt")
	victim := filepath.Join(filepath.Dir(data), "project")
	os.MkdirAll(victim, 0o700)
	os.WriteFile(filepath.Join(victim, "main.go"), []byte("package main"), 0o600)
	b64 := func(s string) string {
		out, err := run(r, context.Background(), map[string]any{"command": "printf %s '" + s + "' | base64 -w0"})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	enc := b64("rm -rf " + victim)
	for _, cmd := range []string{
		"echo x > " + outside,
		"rm -rf " + victim,
		"sh -c 'rm -rf " + victim + "'",
		`r\m -r''f "` + victim + `"`,
		"echo " + enc + " | base64 -d | sh",
		"find " + victim + " -delete",
		"echo x > " + filepath.Join(data, "config.json"),
		"rm -f ../operator.token",
		"echo pwn > /tmp/raven-exec-escape",
	} {
		run(r, context.Background(), map[string]any{"command": cmd})
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("wrote outside the workspace")
	}
	if _, err := os.Stat("/tmp/raven-exec-escape"); err == nil {
		os.Remove("/tmp/raven-exec-escape")
		t.Error("wrote /tmp")
	}
	if b, err := os.ReadFile(filepath.Join(victim, "main.go")); err != nil || string(b) != "package main" {
		t.Errorf("victim damaged: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "config.json")); !strings.Contains(string(b), "model") {
		t.Errorf("config.json overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(data, "operator.token")); err != nil {
		t.Errorf("token removed: %v", err)
	}
	if out, err := run(r, context.Background(), map[string]any{"command": "echo kept > in.txt && cat in.txt"}); err != nil || !strings.Contains(out, "kept") {
		t.Fatalf("workspace write: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Root(), "in.txt")); string(b) != "kept\n" {
		t.Fatalf("in.txt = %q", b)
	}
}

func TestExecEnvHasNoSecrets(t *testing.T) {
	needSandbox(t)
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAVEN_OPERATOR_TOKEN", "RAVEN_WEBHOOK_SECRET", "TELEGRAM_BOT_TOKEN", "MY_DB_PASSWORD", "UNRELATED_VENDOR_VAR"} {
		t.Setenv(k, "SECRET-"+k)
	}
	r, _, _ := defaultExec(t)
	out, err := run(r, context.Background(), map[string]any{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "SECRET") {
		t.Fatalf("env leaked:\n%s", out)
	}
	if !strings.Contains(out, "PATH=") {
		t.Fatalf("env lost PATH:\n%s", out)
	}
}

func TestExecLeavesNoProcessBehind(t *testing.T) {
	r, _, ws := defaultExec(t)
	out, err := run(r, context.Background(), map[string]any{"command": "setsid sh -c 'sleep 300 & echo $! > bg.pid'; while [ ! -s bg.pid ]; do :; done; echo started"})
	if err != nil || !strings.Contains(out, "started") || !strings.Contains(out, "killed when the command ended") {
		t.Fatalf("%q %v", out, err)
	}
	b, err := os.ReadFile(filepath.Join(ws.Root(), "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 1 {
		t.Fatalf("pid %q", b)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("sleep %d outlived the command: %v", pid, err)
	}
}

func loopback(t *testing.T) (port int, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

func connectCmd(port int) string {
	return fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED'", port)
}

func TestExecNetworkOffByDefault(t *testing.T) {
	r, _, _ := defaultExec(t)
	port, accepted := loopback(t)
	out, _ := run(r, context.Background(), map[string]any{"command": connectCmd(port)})
	if strings.Contains(out, "CONNECTED") {
		t.Fatalf("connected with the network off: %q", out)
	}
	select {
	case <-accepted:
		t.Fatal("listener accepted a connection")
	default:
	}
	// Asking for the network without an approver is refused, not run.
	if _, err := run(r, context.Background(), map[string]any{"command": connectCmd(port), "network": true}); !errors.Is(err, tools.ErrNeedsApproval) {
		t.Fatalf("network without approver: %v", err)
	}
}

// approvalsEnv is the exec tool with a real approvals store and the
// gateway's authority.
type approvalsEnv struct {
	reg    *tools.Registry
	store  *approvals.Store
	auth   *auth.Store
	op     auth.Principal
	events chan approvals.Request
	ws     *tools.Workspace
	data   string
}

func newApprovalsEnv(t *testing.T, ttl time.Duration) *approvalsEnv {
	t.Helper()
	needSandbox(t)
	data, ws := dataDir(t)
	db, err := sqlitedb.Open(filepath.Join(data, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	as, err := auth.NewStore(ctx, db, clock.Real())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := as.Create(ctx, auth.RoleOperator, "operator", false)
	op, _ := as.Verify(ctx, tok)
	ev := make(chan approvals.Request, 16)
	st, err := approvals.Open(ctx, db, approvals.Options{Authority: approvals.NewAuthority(as), TTL: ttl,
		Emit: func(_ context.Context, kind, _ string, p any) error {
			if kind == approvals.KindRequested {
				ev <- p.(approvals.Request)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := tools.NewExecWith(tools.ExecOptions{WS: ws, DataDir: data, Timeout: 20 * time.Second, Approver: st})
	if err != nil {
		t.Fatal(err)
	}
	return &approvalsEnv{reg: tools.NewRegistry(e), store: st, auth: as, op: op, events: ev, ws: ws, data: data}
}

type result struct {
	out string
	err error
}

func (a *approvalsEnv) start(ctx context.Context, args map[string]any) chan result {
	ch := make(chan result, 1)
	go func() {
		out, err := run(a.reg, tools.WithTurn(ctx, tools.TurnInfo{Conversation: "cli:owner"}), args)
		ch <- result{out, err}
	}()
	return ch
}

func (a *approvalsEnv) requested(t *testing.T, ch chan result) approvals.Request {
	t.Helper()
	select {
	case r := <-a.events:
		return r
	case res := <-ch:
		t.Fatalf("ran without asking: %q %v", res.out, res.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no approval requested")
	}
	return approvals.Request{}
}

func await(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("exec did not return")
	}
	return result{}
}

func TestExecNetworkApprovalFlow(t *testing.T) {
	a := newApprovalsEnv(t, 0)
	ctx := context.Background()
	port, _ := loopback(t)
	args := map[string]any{"command": connectCmd(port), "network": true}

	ch := a.start(ctx, args)
	req := a.requested(t, ch)
	if req.Command != args["command"] || req.Dir != a.ws.Root() || len(req.Grants) != 1 || req.Grants[0] != approvals.GrantNetwork || req.Conversation != "cli:owner" {
		t.Fatalf("request %+v", req)
	}
	if _, err := a.store.Decide(ctx, a.op, req.ID, approvals.AllowOnce); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.err != nil || !strings.Contains(r.out, "CONNECTED") {
		t.Fatalf("approved once: %q %v", r.out, r.err)
	}

	// Once means once: the identical command asks again. Deny it.
	ch = a.start(ctx, args)
	req2 := a.requested(t, ch)
	if req2.ID == req.ID {
		t.Fatal("approval id reused")
	}
	if _, err := a.store.Decide(ctx, a.op, req2.ID, approvals.Deny); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch)
	if !errors.Is(r.err, tools.ErrNotApproved) || !strings.Contains(r.err.Error(), "denied") || !strings.Contains(r.err.Error(), "did not run") {
		t.Fatalf("denied: %v", r.err)
	}

	// Allow-always: asked once more, then never again for this exact command.
	ch = a.start(ctx, args)
	req3 := a.requested(t, ch)
	if _, err := a.store.Decide(ctx, a.op, req3.ID, approvals.AllowAlways); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.err != nil || !strings.Contains(r.out, "CONNECTED") {
		t.Fatalf("allow-always first run: %q %v", r.out, r.err)
	}
	if r := await(t, a.start(ctx, args)); r.err != nil || !strings.Contains(r.out, "CONNECTED") {
		t.Fatalf("remembered run: %q %v", r.out, r.err)
	}
	select {
	case ev := <-a.events:
		t.Fatalf("remembered command asked again: %+v", ev)
	default:
	}
	// A different command is not covered by the rule.
	cctx, cancel := context.WithCancel(ctx)
	ch = a.start(cctx, map[string]any{"command": connectCmd(port) + " ", "network": true})
	a.requested(t, ch)
	cancel()
	if r := await(t, ch); r.err == nil {
		t.Fatal("different command ran on another's approval")
	}
}

func TestExecApprovalExpires(t *testing.T) {
	a := newApprovalsEnv(t, 300*time.Millisecond)
	r := await(t, a.start(context.Background(), map[string]any{"command": "true", "network": true}))
	if !errors.Is(r.err, approvals.ErrExpired) || !strings.Contains(r.err.Error(), "did not run") {
		t.Fatalf("expired: %v", r.err)
	}
}

func TestExecApprovalByDeviceAndCaptain(t *testing.T) {
	a := newApprovalsEnv(t, 0)
	ctx := context.Background()
	mk := func(role auth.Role, name string, ro bool) auth.Principal {
		tok, err := a.auth.Create(ctx, role, name, ro)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := a.auth.Verify(ctx, tok)
		return p
	}
	ro, captain, dev := mk(auth.RoleDevice, "phone", true), mk(auth.RoleCaptain, "bot", false), mk(auth.RoleDevice, "laptop", false)
	ch := a.start(ctx, map[string]any{"command": "echo ran", "network": true})
	req := a.requested(t, ch)
	for _, p := range []auth.Principal{ro, captain, dev} {
		if _, err := a.store.Decide(ctx, p, req.ID, approvals.AllowOnce); !errors.Is(err, approvals.ErrForbidden) {
			t.Errorf("%s approved: %v", p.Name, err)
		}
	}
	if _, err := a.auth.TakeControl(ctx, dev, "cli:owner", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Decide(ctx, dev, req.ID, approvals.AllowOnce); err != nil {
		t.Fatalf("device holding Take Control: %v", err)
	}
	if r := await(t, ch); r.err != nil || !strings.Contains(r.out, "ran") {
		t.Fatalf("%q %v", r.out, r.err)
	}
}

func TestExecPathGrant(t *testing.T) {
	a := newApprovalsEnv(t, 0)
	ctx := context.Background()
	other := filepath.Join(filepath.Dir(filepath.Dir(a.data)), "project")
	os.MkdirAll(other, 0o700)
	target := filepath.Join(other, "out.txt")
	ch := a.start(ctx, map[string]any{"command": "echo hi > " + target, "paths": []string{other}})
	req := a.requested(t, ch)
	if len(req.Grants) != 1 || req.Grants[0] != approvals.PathGrant(other) {
		t.Fatalf("grants %v", req.Grants)
	}
	a.store.Decide(ctx, a.op, req.ID, approvals.AllowOnce)
	if r := await(t, ch); r.err != nil {
		t.Fatal(r.err)
	}
	if b, _ := os.ReadFile(target); string(b) != "hi\n" {
		t.Fatalf("granted write: %q", b)
	}
	// The data dir, or anything containing it, is never grantable.
	for _, p := range []string{a.data, filepath.Dir(a.data), "/"} {
		if _, err := run(a.reg, ctx, map[string]any{"command": "true", "paths": []string{p}}); err == nil || !strings.Contains(err.Error(), "never be granted") {
			t.Errorf("%s: %v", p, err)
		}
	}
	// A path inside the workspace needs nothing.
	if _, err := run(a.reg, ctx, map[string]any{"command": "true", "paths": []string{a.ws.Root()}}); err != nil {
		t.Fatal(err)
	}
}

type fakeApprover struct {
	grants []string
	err    error
}

func (f *fakeApprover) Approve(_ context.Context, _, _ string, grants []string, _ string) (bool, error) {
	f.grants = grants
	return false, f.err
}

// Without a sandbox exec is off by default, and approval-only when
// configured so — never silently unconfined.
func TestExecWithoutSandbox(t *testing.T) {
	data, ws := dataDir(t)
	none := sandbox.Mode{Kind: sandbox.KindNone, Reason: "test"}
	sb, err := sandbox.New(sandbox.Options{Workspace: ws.Root(), DataDir: data, Mode: &none})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatal(err)
	}
	off, err := tools.NewExecWith(tools.ExecOptions{WS: ws, DataDir: data, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.Run(context.Background(), json.RawMessage(`{"command":"echo hi"}`)); !errors.Is(err, tools.ErrExecOff) {
		t.Fatalf("off: %v", err)
	}
	ap := &fakeApprover{err: approvals.ErrDenied}
	ask, _ := tools.NewExecWith(tools.ExecOptions{WS: ws, DataDir: data, Sandbox: sb, Unsandboxed: tools.UnsandboxedApprove, Approver: ap})
	if _, err := ask.Run(context.Background(), json.RawMessage(`{"command":"echo hi"}`)); !errors.Is(err, tools.ErrNotApproved) || len(ap.grants) != 1 || ap.grants[0] != approvals.GrantUnsandboxed {
		t.Fatalf("approve mode: %v %v", err, ap.grants)
	}
	ap.err = nil
	t.Setenv("OPENAI_API_KEY", "SECRET")
	out, err := ask.Run(context.Background(), json.RawMessage(`{"command":"echo hi; env"}`))
	if err != nil || !strings.Contains(out, "hi") || strings.Contains(out, "SECRET") {
		t.Fatalf("approved unconfined run: %q %v", out, err)
	}
	if _, err := tools.NewExecWith(tools.ExecOptions{WS: ws, Unsandboxed: "yolo"}); err == nil {
		t.Fatal("bad unsandboxed policy accepted")
	}
}

func TestExecDenyListStillRefusesEarly(t *testing.T) {
	r, _, _ := defaultExec(t)
	if _, err := run(r, context.Background(), map[string]any{"command": "rm -rf /"}); !errors.Is(err, tools.ErrDenied) {
		t.Fatalf("%v", err)
	}
}
