package questions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
)

func TestOpenOwnerCreatesAndRebinds(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	ws := t.TempDir()
	res, err := h.store.OpenOwner(ctx, operator, "tui:work", ws)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Kind != KindOwner || res.Owner != operator.Name || res.OwnerGeneration != operator.Generation ||
		res.Workspace.Path != ws || !res.Workspace.BirthKnown() || !res.CanHoldQuestion {
		t.Fatalf("open = %+v", res)
	}
	// Re-opening with the same binding keeps the incarnation, so a pending
	// question survives the TUI restarting.
	if _, err := h.store.Ask(ctx, "tui:work", NewQuestion{Question: "Which linter?"}); err != nil {
		t.Fatal(err)
	}
	again, err := h.store.OpenOwner(ctx, operator, "tui:work", ws)
	if err != nil || again.Created || again.Rebound || again.Incarnation != res.Incarnation || again.PendingRequest == "" {
		t.Fatalf("reopen = %+v, %v", again, err)
	}
	// Another directory: fresh incarnation, the pending question cancelled
	// with its input_resolved event.
	other := t.TempDir()
	rb, err := h.store.OpenOwner(ctx, operator, "tui:work", other)
	if err != nil || !rb.Rebound || rb.Incarnation == res.Incarnation || rb.PendingRequest != "" || rb.Workspace.Path != other {
		t.Fatalf("rebind = %+v, %v", rb, err)
	}
	ev := h.eventsOf(EventInputResolved)
	if len(ev) != 1 || ev[0].payload.(InputResolvedEvent).Reason != ReasonWorkspaceChanged {
		t.Fatalf("resolved = %+v", ev)
	}
}

func TestOpenOwnerRefusals(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	if _, err := h.store.NewConversation(ctx, operator, "room:lobby", KindRoom, ""); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name string
		p    auth.Principal
		conv string
		dir  string
		code string
	}{
		{"device may not bind", tablet, "tui:x", t.TempDir(), CodeForbidden},
		{"captain may not bind", captain, "tui:x", t.TempDir(), CodeForbidden},
		{"relative path", operator, "tui:x", "rel/dir", CodeInvalidParams},
		{"missing dir", operator, "tui:x", "/nonexistent/raven", CodeInvalidParams},
		{"a file", operator, "tui:x", file, CodeInvalidParams},
		{"other kind", operator, "room:lobby", t.TempDir(), CodeConflict},
		{"no conversation", operator, "", t.TempDir(), CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.store.OpenOwner(ctx, tt.p, tt.conv, tt.dir)
			wantCode(t, err, tt.code)
		})
	}
}

// Every kind can be created; only owner can hold a question.
func TestNewConversationKinds(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	for _, k := range []Kind{KindOwner, KindNative, KindRoom, KindGlobal, KindSide} {
		t.Run(string(k), func(t *testing.T) {
			v, err := h.store.NewConversation(ctx, operator, "", k, h.ws)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(v.ID, string(k)+":") || v.Kind != k {
				t.Fatalf("new = %+v", v)
			}
			if CanHoldQuestion(v.Conversation) != (k == KindOwner) || v.CanHoldQuestion != (k == KindOwner) {
				t.Fatalf("%s can hold = %v/%v", k, CanHoldQuestion(v.Conversation), v.CanHoldQuestion)
			}
			_, err = h.store.Ask(ctx, v.ID, NewQuestion{Question: "q?"})
			if k == KindOwner {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, CodeUnavailable)
		})
	}
	_, err := h.store.NewConversation(ctx, operator, "", "chatroom", "")
	wantCode(t, err, CodeInvalidParams)
	_, err = h.store.NewConversation(ctx, operator, "", KindOwner, "")
	wantCode(t, err, CodeInvalidParams)
}

func TestResetAuthority(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	s := h.ask()
	for _, p := range []auth.Principal{tablet, viewer, captain} {
		_, err := h.store.ResetAs(ctx, p, ownerConv)
		wantCode(t, err, CodeForbidden)
	}
	h.ctrl.set(ownerConv, tablet.Name)
	v, err := h.store.ResetAs(ctx, tablet, ownerConv)
	if err != nil || v.Incarnation == s.Incarnation || v.PendingRequest != "" {
		t.Fatalf("reset = %+v, %v", v, err)
	}
	_, err = h.store.Answer(ctx, operator, answerFor(s, 0))
	wantCode(t, err, CodeConflict)
}

// A native seat takes over between an accepted answer and the start of its
// continuation: the continuation never starts, its run is failed, and the
// takeover is what the receipt shows.
func TestNativeTakeoverBeforeContinuation(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	s := h.ask()
	h.store.beforeContinue = func() {
		res, err := h.store.ClaimNative(ctx, ownerConv, "chat:repl")
		if err != nil {
			t.Error(err)
		}
		if res.StoppedRuns != 1 || res.CanHoldQuestion || res.NativeOwner != "chat:repl" {
			t.Errorf("claim = %+v", res)
		}
	}
	rec, err := h.store.Answer(ctx, operator, answerFor(s, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.continuations()) != 0 {
		t.Fatalf("continuation started after the takeover: %v", h.continuations())
	}
	if rec.Continuation != RunFailed || !strings.Contains(rec.ContinuationError, "native takeover") {
		t.Fatalf("receipt = %+v", rec)
	}
	// And a takeover of a pending question cancels it before any answer.
	h.store.beforeContinue = nil
	if _, err := h.store.ReleaseNative(ctx, ownerConv, "chat:other"); CodeOf(err) != CodeConflict {
		t.Fatalf("release by another seat: %v", err)
	}
	if _, err := h.store.ReleaseNative(ctx, ownerConv, "chat:repl"); err != nil {
		t.Fatal(err)
	}
	s2 := h.ask()
	if _, err := h.store.ClaimNative(ctx, ownerConv, "chat:repl"); err != nil {
		t.Fatal(err)
	}
	_, err = h.store.Answer(ctx, operator, answerFor(s2, 0))
	wantCode(t, err, CodeConflict)
	ev := h.eventsOf(EventInputResolved)
	if last := ev[len(ev)-1].payload.(InputResolvedEvent); last.RequestID != s2.Request.RequestID || last.Reason != ReasonNativeTakeover {
		t.Fatalf("last resolved = %+v", last)
	}
	if len(h.continuations()) != 0 {
		t.Fatal("a continuation started")
	}
}

// A native claim on an unknown conversation creates a native-seat
// conversation, which can never hold a question.
func TestClaimNativeCreates(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	res, err := h.store.ClaimNative(ctx, "cli:repl", "chat:1")
	if err != nil || res.Kind != KindNative || res.NativeOwner != "chat:1" || res.CanHoldQuestion {
		t.Fatalf("claim = %+v, %v", res, err)
	}
}

type fakeLeases struct{ taken map[string]string }

func (f *fakeLeases) TakeControl(_ context.Context, p auth.Principal, conv string, ttl time.Duration) (auth.Lease, error) {
	if p.ReadOnly || p.Role == auth.RoleCaptain {
		return auth.Lease{}, auth.ErrForbidden
	}
	f.taken[conv] = p.Name
	return auth.Lease{Conversation: conv, Holder: p.Name}, nil
}

func (f *fakeLeases) Release(_ context.Context, p auth.Principal, conv string) (bool, error) {
	ok := f.taken[conv] == p.Name
	delete(f.taken, conv)
	return ok, nil
}

func TestHandlersStrict(t *testing.T) {
	ctx := context.Background()
	leases := &fakeLeases{taken: map[string]string{}}
	h := newHarness(t, func(o *StoreOptions) { o.Leases = leases })
	// The operations gateway.RegisterQuestions serves, each behind a strict
	// decode of its DTO as the control API does it.
	s := h.store
	methods := map[string]func(context.Context, auth.Principal, []byte) error{
		"list": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, _ struct{}) ([]ConversationView, error) {
				return s.ListConversations(ctx, p)
			})
		},
		"show": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, in ConversationParams) (ConversationView, error) {
				return s.ShowConversation(ctx, p, in.Conversation)
			})
		},
		"open": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, in OpenParams) (OpenResult, error) {
				return s.OpenOwner(ctx, p, in.Conversation, in.Workspace)
			})
		},
		"new": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, in NewParams) (ConversationView, error) {
				return s.NewConversation(ctx, p, in.Conversation, in.Kind, in.Workspace)
			})
		},
		"reset": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, in ConversationParams) (ConversationView, error) {
				return s.ResetAs(ctx, p, in.Conversation)
			})
		},
		"take": func(ctx context.Context, p auth.Principal, b []byte) error { return strictly(ctx, p, b, s.TakeAs) },
		"release": func(ctx context.Context, p auth.Principal, b []byte) error {
			return strictly(ctx, p, b, func(ctx context.Context, p auth.Principal, in ConversationParams) (ReleaseResult, error) {
				return s.ReleaseControl(ctx, p, in.Conversation)
			})
		},
		"native": func(ctx context.Context, p auth.Principal, b []byte) error { return strictly(ctx, p, b, s.Native) },
	}
	call := func(name string, p auth.Principal, params string) error {
		return methods[name](ctx, p, []byte(params))
	}
	ws, _ := json.Marshal(h.ws)
	tests := []struct {
		method, params string
		p              auth.Principal
		code           string
	}{
		{"list", `{}`, operator, ""},
		{"list", `{"x":1}`, operator, CodeInvalidParams},
		{"show", `{"conversation":"tui:main"}`, captain, ""},
		{"show", `{"conversation":"tui:main","extra":true}`, operator, CodeInvalidParams},
		{"show", `{"conversation":"` + strings.Repeat("x", MaxConversationLen+1) + `"}`, operator, CodeInvalidParams},
		{"show", `{"conversation":"tui:none"}`, operator, CodeNotFound},
		{"open", `{"conversation":"tui:b","workspace":` + string(ws) + `}`, operator, ""},
		{"new", `{"kind":"side"}`, operator, ""},
		{"new", `{"kind":"owner","workspace":` + string(ws) + `}`, tablet, CodeForbidden},
		{"take", `{"conversation":"tui:main","ttl_s":-1}`, tablet, CodeInvalidParams},
		{"take", `{"conversation":"tui:none"}`, tablet, CodeNotFound},
		{"take", `{"conversation":"tui:main"}`, viewer, CodeForbidden},
		{"take", `{"conversation":"tui:main"}`, tablet, ""},
		{"release", `{"conversation":"tui:main"}`, tablet, ""},
		{"reset", `{"conversation":"tui:main"}`, captain, CodeForbidden},
		{"native", `{"conversation":"tui:main","seat":"x"}`, tablet, CodeForbidden},
		{"native", `{"conversation":"tui:main"}`, operator, CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.params, func(t *testing.T) {
			err := call(tt.method, tt.p, tt.params)
			wantCode(t, err, tt.code)
		})
	}
	if len(methods) != 8 {
		t.Fatalf("methods = %d", len(methods))
	}
}

// Revoking or rotating the owner credential cancels its pending question
// at once, through the hook the real auth store calls.
func TestCredentialChangeCancelsAtOnce(t *testing.T) {
	for _, change := range []auth.CredentialChange{auth.CredentialRevoked, auth.CredentialRotated} {
		t.Run(string(change), func(t *testing.T) {
			ctx := context.Background()
			h := newHarness(t, nil)
			db := h.store.db
			as, err := auth.NewStore(ctx, db, h.clk)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := as.Create(ctx, auth.RoleOperator, tuiOwner, false); err != nil {
				t.Fatal(err)
			}
			as.OnCredentialChange(h.store.CredentialChanged)
			h.ask()
			if change == auth.CredentialRevoked {
				err = as.Revoke(ctx, tuiOwner)
			} else {
				_, err = as.Rotate(ctx, tuiOwner)
			}
			if err != nil {
				t.Fatal(err)
			}
			ev := h.eventsOf(EventInputResolved)
			want := map[auth.CredentialChange]string{auth.CredentialRevoked: ReasonOwnerRevoked, auth.CredentialRotated: ReasonCredentialRotated}[change]
			if len(ev) != 1 || ev[0].payload.(InputResolvedEvent).Reason != want {
				t.Fatalf("resolved events right after %s = %+v", change, ev)
			}
			v, err := h.store.ShowConversation(ctx, operator, ownerConv)
			if err != nil || v.PendingRequest != "" {
				t.Fatalf("show = %+v, %v", v, err)
			}
		})
	}
}

// rm -rf D && mkdir D: the new directory may get the same inode (ext4
// does); its birth time still tells it apart. Where the filesystem did not
// reuse the inode, the seam makes identification report the old one.
func TestWorkspaceInodeReuse(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	dir := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.OpenOwner(ctx, operator, "tui:proj", dir); err != nil {
		t.Fatal(err)
	}
	before, _ := IdentifyWorkspace(dir)
	if !before.BirthKnown() {
		t.Skip("filesystem reports no birth time")
	}
	s, err := h.store.Ask(ctx, "tui:proj", NewQuestion{Question: "Which test runner?", Options: []string{"go test", "gotestsum"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "rm -rf '"+dir+"' && mkdir '"+dir+"'").CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	after, _ := IdentifyWorkspace(dir)
	if after.Ino != before.Ino {
		t.Logf("inode not reused (%d → %d): simulating reuse", before.Ino, after.Ino)
		h.store.identify = func(d string) (WorkspaceID, error) {
			id, err := IdentifyWorkspace(d)
			if d == dir {
				id.Dev, id.Ino = before.Dev, before.Ino
			}
			return id, err
		}
	}
	if f, ok := h.store.TurnMembership(ctx, "tui:proj"); !ok || f.Status != MembershipUnknown {
		t.Fatalf("membership after re-creation = %+v", f)
	}
	_, err = h.store.Answer(ctx, operator, answerFor(s, 0))
	wantCode(t, err, CodeConflict)
	var qe *Error
	if !errors.As(err, &qe) || qe.Reason != "question_cancelled" {
		t.Fatalf("answer err = %v", err)
	}
	ev := h.eventsOf(EventInputResolved)
	if len(ev) != 1 || ev[0].payload.(InputResolvedEvent).Reason != ReasonWorkspaceReplaced {
		t.Fatalf("resolved = %+v", ev)
	}
}

// Where the birth time cannot be known, the fact is unknown and an answer
// is refused as workspace_changed.
func TestWorkspaceBirthUnknown(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	s := h.ask()
	h.store.identify = func(d string) (WorkspaceID, error) {
		id, err := IdentifyWorkspace(d)
		id.BirthNs = 0
		return id, err
	}
	if f, ok := h.store.TurnMembership(ctx, ownerConv); !ok || f.Status != MembershipUnknown {
		t.Fatalf("membership = %+v", f)
	}
	_, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	wantCode(t, err, CodeConflict)
	ev := h.eventsOf(EventInputResolved)
	if len(ev) != 1 || ev[0].payload.(InputResolvedEvent).Reason != ReasonWorkspaceChanged {
		t.Fatalf("resolved = %+v", ev)
	}
	if err := h.store.Eligible(ctx, ownerConv); CodeOf(err) != CodeUnavailable {
		t.Fatalf("eligible = %v", err)
	}
}

func TestDefaultWorkspace(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	data := filepath.Join(base, ".raven")
	proj := filepath.Join(base, "proj")
	os.MkdirAll(filepath.Join(data, "workspace"), 0o700)
	os.Mkdir(proj, 0o700)
	tests := []struct {
		cwd  string
		want string
		ok   bool
	}{
		{proj, proj, true},
		{data, "", false},
		{filepath.Join(data, "workspace"), "", false},
		{filepath.Join(base, "missing"), "", false},
		{base, base, true},
	}
	for _, tt := range tests {
		if got, ok := DefaultWorkspace(tt.cwd, data); got != tt.want || ok != tt.ok {
			t.Errorf("DefaultWorkspace(%s) = %q, %v; want %q, %v", tt.cwd, got, ok, tt.want, tt.ok)
		}
	}
}

func BenchmarkTurnMembership(b *testing.B) {
	h := newHarness(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := h.store.TurnMembership(ctx, ownerConv); !ok {
			b.Fatal("no fact")
		}
	}
}

func BenchmarkIdentifyWorkspace(b *testing.B) {
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := IdentifyWorkspace(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func TestQuestionToolOfferedOnlyWhereAQuestionCanBeHeld(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	tool := NewQuestionTool(h.store)
	if _, err := h.store.NewConversation(ctx, operator, "room:r", KindRoom, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.ClaimNative(ctx, "cli:native", "chat:1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		conv string
		want bool
	}{{ownerConv, true}, {"room:r", false}, {"cli:native", false}, {"tui:unknown", false}}
	for _, tt := range tests {
		if got := tool.OfferedIn(ctx, tt.conv); got != tt.want {
			t.Errorf("OfferedIn(%s) = %v, want %v", tt.conv, got, tt.want)
		}
	}
	h.creds.set(tuiOwner, 1, false) // owner credential revoked
	if tool.OfferedIn(ctx, ownerConv) {
		t.Error("offered with a revoked owner credential")
	}
}

// A continuation handed to the runtime but still waiting for its turn
// asks BeginRun when the turn starts: refused (native_takeover) once a
// native seat holds the conversation, allowed otherwise.
func TestBeginRunRefusedAfterNativeTakeover(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	h.ask()
	if err := h.store.BeginRun(ctx, ownerConv, "run-1"); err != nil {
		t.Fatalf("begin run with no native seat: %v", err)
	}
	if _, err := h.store.ClaimNative(ctx, ownerConv, "chat:repl"); err != nil {
		t.Fatal(err)
	}
	err := h.store.BeginRun(ctx, ownerConv, "run-1")
	wantCode(t, err, CodeUnavailable)
	var qe *Error
	if !errors.As(err, &qe) || qe.Reason != ReasonNativeTakeover {
		t.Fatalf("begin run after takeover: %v", err)
	}
}
