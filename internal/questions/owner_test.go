package questions

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
)

func TestAnswerAuthorityMatrix(t *testing.T) {
	tests := []struct {
		name   string
		p      auth.Principal
		setup  func(h *harness)
		wantOK bool
		reason string
	}{
		{name: "operator", p: operator, wantOK: true},
		{name: "control device holding the lease", p: tablet, setup: func(h *harness) { h.ctrl.set(ownerConv, "tablet") }, wantOK: true},
		{name: "control device other than the lease holder", p: phone, setup: func(h *harness) { h.ctrl.set(ownerConv, "tablet") }, reason: "not_controller"},
		{name: "control device without any lease", p: tablet, reason: "not_controller"},
		{name: "read-only device even holding the lease", p: viewer, setup: func(h *harness) { h.ctrl.set(ownerConv, "viewer") }, reason: "read_only"},
		{name: "captain", p: captain, reason: "captain"},
		{name: "rotated operator credential", p: operator, setup: func(h *harness) { h.creds.set("owner", 2, true) }, reason: "rotated"},
		{name: "revoked control device", p: tablet, setup: func(h *harness) { h.ctrl.set(ownerConv, "tablet"); h.creds.set("tablet", 1, false) }, reason: "revoked"},
		{name: "no principal (room message)", p: auth.Principal{}, reason: "unauthenticated"},
		{name: "unknown role", p: auth.Principal{Name: "owner", Role: "room", Generation: 1}, reason: "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.ask()
			if tt.setup != nil {
				tt.setup(h)
			}
			rec, err := h.store.Answer(context.Background(), tt.p, answerFor(s, 0))
			if tt.wantOK {
				if err != nil || rec.Status != StatusAnswered || rec.RunID == "" {
					t.Fatalf("Answer = %+v, %v; want accepted", rec, err)
				}
				return
			}
			wantCode(t, err, CodeForbidden)
			if !errors.Is(err, &Error{code: CodeForbidden, Reason: tt.reason}) {
				t.Fatalf("err = %v, want reason %s", err, tt.reason)
			}
			// Cancel follows the same authority.
			_, err = h.store.Cancel(context.Background(), tt.p, CancelParams{s.Conversation, s.Request.RequestID, s.Incarnation, s.Revision})
			wantCode(t, err, CodeForbidden)
			got, _ := h.store.Get(context.Background(), captain, GetParams{Conversation: ownerConv})
			if got.Status != StatusPending {
				t.Fatalf("status after refused answer = %s", got.Status)
			}
		})
	}
}

func TestReadAuthority(t *testing.T) {
	h := newHarness(t, nil)
	h.ask()
	for _, p := range []auth.Principal{operator, tablet, viewer, captain} {
		if _, err := h.store.Get(context.Background(), p, GetParams{Conversation: ownerConv}); err != nil {
			t.Errorf("%s cannot read: %v", p.Name, err)
		}
	}
	h.creds.set("ci", 1, false)
	_, err := h.store.Get(context.Background(), captain, GetParams{Conversation: ownerConv})
	wantCode(t, err, CodeForbidden)
}

func TestStrictDTOs(t *testing.T) {
	h := newHarness(t, nil)
	s := h.ask()
	valid := `"conversation":"tui:main","request_id":"` + s.Request.RequestID + `","incarnation":"` + s.Incarnation + `","revision":2`
	long := strings.Repeat("x", MaxAnswerTextLen+1)
	tests := []struct {
		name   string
		op     func(context.Context, auth.Principal, []byte) error
		params string
	}{
		{"answer unknown field", h.inputAnswer, `{` + valid + `,"option_id":"` + s.Request.Options[0].OptionID + `","force":true}`},
		{"answer wrong type", h.inputAnswer, `{"conversation":"tui:main","request_id":"` + s.Request.RequestID + `","incarnation":"` + s.Incarnation + `","revision":"2","text":"x"}`},
		{"answer oversize text", h.inputAnswer, `{` + valid + `,"text":"` + long + `"}`},
		{"answer oversize frame", h.inputAnswer, `{` + valid + `,"text":"` + strings.Repeat("y", MaxParamsBytes) + `"}`},
		{"answer both option and text", h.inputAnswer, `{` + valid + `,"option_id":"` + s.Request.Options[0].OptionID + `","text":"x"}`},
		{"answer neither", h.inputAnswer, `{` + valid + `}`},
		{"answer malformed request id", h.inputAnswer, `{"conversation":"tui:main","request_id":"1","incarnation":"` + s.Incarnation + `","revision":2,"text":"x"}`},
		{"answer zero revision", h.inputAnswer, `{"conversation":"tui:main","request_id":"` + s.Request.RequestID + `","incarnation":"` + s.Incarnation + `","text":"x"}`},
		{"answer trailing data", h.inputAnswer, `{` + valid + `,"text":"x"} {}`},
		{"answer not an object", h.inputAnswer, `["x"]`},
		{"answer oversize conversation", h.inputAnswer, `{"conversation":"` + strings.Repeat("c", MaxConversationLen+1) + `","request_id":"` + s.Request.RequestID + `","incarnation":"` + s.Incarnation + `","revision":2,"text":"x"}`},
		{"get unknown field", h.store.inputGet, `{"conversation":"tui:main","all":true}`},
		{"get missing conversation", h.store.inputGet, `{}`},
		{"cancel unknown field", h.store.inputCancel, `{` + valid + `,"reason":"x"}`},
		{"cancel null", h.store.inputCancel, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op(context.Background(), operator, []byte(tt.params))
			wantCode(t, err, CodeInvalidParams)
		})
	}
	got, err := h.store.Get(context.Background(), operator, GetParams{Conversation: ownerConv})
	if err != nil || got.Status != StatusPending {
		t.Fatalf("question disturbed by bad input: %+v %v", got, err)
	}
	// The valid form of the same call is accepted.
	if err := h.inputAnswer(context.Background(), operator, []byte(`{`+valid+`,"text":"tabs, but 4 wide"}`)); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) inputAnswer(ctx context.Context, p auth.Principal, b []byte) error {
	return strictly(ctx, p, b, h.store.Answer)
}
func (s *Store) inputGet(ctx context.Context, p auth.Principal, b []byte) error {
	return strictly(ctx, p, b, s.Get)
}
func (s *Store) inputCancel(ctx context.Context, p auth.Principal, b []byte) error {
	return strictly(ctx, p, b, s.Cancel)
}

// strictly decodes raw params into the DTO the way a strict transport
// does, then runs the typed operation: the DTO's bounds and the
// operation's checks are tested together.
func strictly[Req, Resp any](ctx context.Context, p auth.Principal, b []byte, op func(context.Context, auth.Principal, Req) (Resp, error)) error {
	var in Req
	if err := decodeStrict(b, &in); err != nil {
		return err
	}
	_, err := op(ctx, p, in)
	return err
}

func TestDuplicateAnswerReturnsOriginalReceipt(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	first, err := h.store.Answer(ctx, operator, answerFor(s, 1))
	if err != nil {
		t.Fatal(err)
	}
	if first.Continuation != RunSubmitted || first.Duplicate {
		t.Fatalf("first receipt = %+v", first)
	}
	// The revision moves on: a new question is asked.
	next := h.ask()
	if next.Revision <= s.Revision {
		t.Fatalf("revision did not move: %d -> %d", s.Revision, next.Revision)
	}
	again, err := h.store.Answer(ctx, operator, answerFor(s, 1))
	if err != nil {
		t.Fatalf("duplicate answer refused: %v", err)
	}
	if again.ReceiptID != first.ReceiptID || again.RunID != first.RunID || !again.Duplicate {
		t.Fatalf("duplicate receipt = %+v, want original %+v", again, first)
	}
	if n := len(h.continuations()); n != 1 {
		t.Fatalf("continuation submitted %d times, want 1", n)
	}
	// A different answer to the consumed request is a conflict.
	_, err = h.store.Answer(ctx, operator, answerFor(s, 0))
	if !errors.Is(err, &Error{code: CodeConflict, Reason: "already_answered"}) {
		t.Fatalf("conflicting answer: %v", err)
	}
	text := answerFor(s, 0)
	text.OptionID, text.Text = "", "tabs"
	_, err = h.store.Answer(ctx, operator, text)
	wantCode(t, err, CodeConflict)
}

func TestRevisionMismatchRequiresReread(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	stale := answerFor(s, 0)
	stale.Revision--
	_, err := h.store.Answer(ctx, operator, stale)
	if !errors.Is(err, &Error{code: CodeConflict, Reason: "revision_mismatch"}) {
		t.Fatalf("stale revision: %v", err)
	}
	_, err = h.store.Cancel(ctx, operator, CancelParams{s.Conversation, s.Request.RequestID, s.Incarnation, s.Revision + 1})
	wantCode(t, err, CodeConflict)
	snap, _ := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv})
	if snap.Status != StatusPending {
		t.Fatalf("status = %s", snap.Status)
	}
	if _, err := h.store.Answer(ctx, operator, answerFor(snap, 0)); err != nil {
		t.Fatalf("answer after re-read: %v", err)
	}
}

func TestAnswerValidatedAgainstQuestion(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s, err := h.store.Ask(ctx, ownerConv, NewQuestion{Question: "Pick", Options: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	p := answerFor(s, 0)
	p.OptionID = newUUID()
	_, err = h.store.Answer(ctx, operator, p)
	wantCode(t, err, CodeInvalidParams)
	p.OptionID, p.Text = "", "c"
	_, err = h.store.Answer(ctx, operator, p)
	wantCode(t, err, CodeInvalidParams) // text not allowed on this choice question
	_, err = h.store.Answer(ctx, operator, AnswerParams{Conversation: ownerConv, RequestID: newUUID(), Incarnation: s.Incarnation, Revision: s.Revision, Text: "x"})
	wantCode(t, err, CodeNotFound)
	p = answerFor(s, 0)
	p.Incarnation = newUUID()
	_, err = h.store.Answer(ctx, operator, p)
	wantCode(t, err, CodeConflict)
}

func TestAcceptanceIsOneTransaction(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	h.store.afterAnswerWrite = func() error { return errors.New("disk full") }
	if _, err := h.store.Answer(ctx, operator, answerFor(s, 0)); err == nil {
		t.Fatal("answer accepted despite failed run write")
	}
	snap, err := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Status != StatusPending || snap.Revision != s.Revision {
		t.Fatalf("half-stored answer: %+v", snap)
	}
	var runs int
	h.store.db.QueryRow(`SELECT COUNT(*) FROM question_runs`).Scan(&runs)
	if runs != 0 || len(h.continuations()) != 0 || len(h.eventsOf(EventInputResolved)) != 0 {
		t.Fatalf("runs=%d continuations=%d resolved events=%d", runs, len(h.continuations()), len(h.eventsOf(EventInputResolved)))
	}
	h.store.afterAnswerWrite = nil
	if _, err := h.store.Answer(ctx, operator, answerFor(s, 0)); err != nil {
		t.Fatalf("retry after rollback: %v", err)
	}
}

func TestContinuationFailureLeavesAnswerSubmitted(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.contErr = errors.New("scheduler closed")
	s := h.ask()
	rec, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusAnswered || rec.Continuation != RunFailed || !strings.Contains(rec.ContinuationError, "scheduler closed") {
		t.Fatalf("receipt = %+v", rec)
	}
	h.contErr = nil
	again, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	if err != nil || again.Continuation != RunFailed || again.RunID != rec.RunID {
		t.Fatalf("duplicate = %+v, %v", again, err)
	}
	if n := len(h.continuations()); n != 1 {
		t.Fatalf("resubmitted automatically: %d continuations", n)
	}
	snap, _ := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: s.Request.RequestID})
	if snap.Receipt == nil || snap.Receipt.Continuation != RunFailed {
		t.Fatalf("snapshot receipt = %+v", snap.Receipt)
	}
}

func TestFinishRun(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	rec, _ := h.store.Answer(ctx, operator, answerFor(s, 0))
	if err := h.store.FinishRun(ctx, rec.RunID, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.store.FinishRun(ctx, rec.RunID, nil); CodeOf(err) != CodeNotFound {
		t.Fatalf("second finish: %v", err)
	}
	snap, _ := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: s.Request.RequestID})
	if snap.Receipt.Continuation != RunFinished {
		t.Fatalf("continuation = %s", snap.Receipt.Continuation)
	}
	// A finished run survives recovery untouched.
	rep, err := h.store.Recover(ctx)
	if err != nil || rep.FailedRuns != 0 {
		t.Fatalf("recover = %+v, %v", rep, err)
	}
}

func TestRecoverAfterRestart(t *testing.T) {
	h := newHarness(t, func(o *StoreOptions) { o.Continue = nil }) // crash before submission
	ctx := context.Background()
	s := h.ask()
	rec, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	if err != nil || rec.Continuation != RunAccepted {
		t.Fatalf("answer = %+v, %v", rec, err)
	}
	p := h.ask()
	rep, err := h.store.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cancelled != 1 || rep.FailedRuns != 1 {
		t.Fatalf("recover = %+v", rep)
	}
	snap, _ := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: p.Request.RequestID})
	if snap.Status != StatusCancelled || snap.Receipt.Reason != ReasonRestart {
		t.Fatalf("pending after restart = %+v", snap)
	}
	old, _ := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: s.Request.RequestID})
	if old.Receipt.Continuation != RunFailed {
		t.Fatalf("orphaned continuation = %s", old.Receipt.Continuation)
	}
	_, err = h.store.Answer(ctx, operator, answerFor(p, 0))
	wantCode(t, err, CodeConflict)
	if len(h.continuations()) != 0 {
		t.Fatal("recovery re-executed something")
	}
}

func TestInvalidation(t *testing.T) {
	tests := []struct {
		name     string
		act      func(t *testing.T, h *harness, s Snapshot)
		status   string
		reason   string
		wantCode string
	}{
		{"reset", func(t *testing.T, h *harness, s Snapshot) {
			c, err := h.store.Reset(context.Background(), ownerConv)
			if err != nil || c.Incarnation == s.Incarnation {
				t.Fatalf("reset = %+v, %v", c, err)
			}
		}, StatusCancelled, ReasonReset, CodeConflict},
		{"explicit cancel", func(t *testing.T, h *harness, s Snapshot) {
			if _, err := h.store.Cancel(context.Background(), operator, CancelParams{s.Conversation, s.Request.RequestID, s.Incarnation, s.Revision}); err != nil {
				t.Fatal(err)
			}
		}, StatusCancelled, ReasonCancelled, CodeConflict},
		{"owner revoked", func(t *testing.T, h *harness, s Snapshot) {
			if n, err := h.store.OwnerRevoked(context.Background(), tuiOwner); err != nil || n != 1 {
				t.Fatalf("OwnerRevoked = %d, %v", n, err)
			}
		}, StatusCancelled, ReasonOwnerRevoked, CodeConflict},
		{"owner credential rotated, seen on use", func(t *testing.T, h *harness, s Snapshot) {
			h.creds.set(tuiOwner, 2, true)
		}, StatusCancelled, ReasonCredentialRotated, CodeConflict},
		{"workspace replaced", func(t *testing.T, h *harness, s Snapshot) {
			// Moving the old directory away keeps its inode alive, so the
			// re-created one at the same path is certainly a different inode.
			if err := os.Rename(h.ws, h.ws+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(h.ws, 0o700); err != nil {
				t.Fatal(err)
			}
		}, StatusCancelled, ReasonWorkspaceReplaced, CodeConflict},
		{"workspace removed", func(t *testing.T, h *harness, s Snapshot) {
			os.Remove(h.ws)
		}, StatusCancelled, ReasonWorkspaceReplaced, CodeConflict},
		{"native takeover", func(t *testing.T, h *harness, s Snapshot) {
			if _, err := h.store.NativeTakeover(context.Background(), ownerConv, "seat-1"); err != nil {
				t.Fatal(err)
			}
		}, StatusCancelled, ReasonNativeTakeover, CodeConflict},
		{"expiry, seen on use", func(t *testing.T, h *harness, s Snapshot) {
			h.clk.Advance(DefaultQuestionTTL)
		}, StatusExpired, ReasonExpired, CodeExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			s := h.ask()
			tt.act(t, h, s)
			_, err := h.store.Answer(ctx, operator, answerFor(s, 0))
			wantCode(t, err, tt.wantCode)
			snap, err := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: s.Request.RequestID})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Status != tt.status || snap.Receipt == nil || snap.Receipt.Reason != tt.reason {
				t.Fatalf("snapshot = %+v receipt %+v, want %s/%s", snap, snap.Receipt, tt.status, tt.reason)
			}
			if len(h.continuations()) != 0 {
				t.Fatal("continuation started for an invalidated question")
			}
			resolved := h.eventsOf(EventInputResolved)
			if len(resolved) != 1 || resolved[0].payload.(InputResolvedEvent).Reason != tt.reason {
				t.Fatalf("resolved events = %+v", resolved)
			}
		})
	}
}

func TestWorkspaceReplacementDetectedByInode(t *testing.T) {
	dir := t.TempDir() + "/ws"
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id, err := IdentifyWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Verify(); err != nil {
		t.Fatalf("unchanged dir: %v", err)
	}
	// Moving it away keeps the old inode alive, so the new one differs.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := id.Verify(); err == nil {
		t.Fatal("replaced directory verified as the same workspace")
	}
}

func TestAskEligibility(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		spec ConversationSpec
		code string
	}{
		{"native seat", ConversationSpec{Kind: KindNative, Owner: tuiOwner, OwnerGeneration: 1}, CodeUnavailable},
		{"room", ConversationSpec{Kind: KindRoom, Owner: tuiOwner, OwnerGeneration: 1}, CodeUnavailable},
		{"global", ConversationSpec{Kind: KindGlobal, Owner: tuiOwner, OwnerGeneration: 1}, CodeUnavailable},
		{"side", ConversationSpec{Kind: KindSide, Owner: tuiOwner, OwnerGeneration: 1}, CodeUnavailable},
		{"persisted native owner (offline)", ConversationSpec{Kind: KindOwner, Owner: tuiOwner, OwnerGeneration: 1, NativeOwner: "seat-1"}, CodeUnavailable},
		{"unauthenticated", ConversationSpec{Kind: KindOwner}, CodeUnavailable},
		{"no workspace", ConversationSpec{Kind: KindOwner, Owner: tuiOwner, OwnerGeneration: 1, Workspace: "-"}, CodeUnavailable},
		{"stale owner credential", ConversationSpec{Kind: KindOwner, Owner: tuiOwner, OwnerGeneration: 7}, CodeUnavailable},
		{"eligible", ConversationSpec{Kind: KindOwner, Owner: tuiOwner, OwnerGeneration: 1}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			tt.spec.ID = "c" + string(rune('a'+i))
			switch tt.spec.Workspace {
			case "-":
				tt.spec.Workspace = ""
			default:
				tt.spec.Workspace = t.TempDir()
			}
			if _, err := h.store.CreateConversation(ctx, tt.spec); err != nil {
				t.Fatal(err)
			}
			_, err := h.store.Ask(ctx, tt.spec.ID, NewQuestion{Question: "Why?"})
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				_, err = h.store.Ask(ctx, tt.spec.ID, NewQuestion{Question: "And?"})
				if !errors.Is(err, &Error{code: CodeConflict, Reason: "question_pending"}) {
					t.Fatalf("second pending question: %v", err)
				}
				return
			}
			wantCode(t, err, tt.code)
		})
	}
	h := newHarness(t, nil)
	_, err := h.store.Ask(ctx, "nope", NewQuestion{Question: "x"})
	wantCode(t, err, CodeNotFound)
	_, err = h.store.Ask(ctx, ownerConv, NewQuestion{Question: "x", Options: make([]string, MaxOptions+1)})
	wantCode(t, err, CodeInvalidParams)
}

func TestPendingSetNativeOwnerExcludes(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	if _, err := h.store.SetNativeOwner(ctx, ownerConv, "seat-9"); err != nil {
		t.Fatal(err)
	}
	_, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	wantCode(t, err, CodeConflict)
	_, err = h.store.Ask(ctx, ownerConv, NewQuestion{Question: "x"})
	wantCode(t, err, CodeUnavailable)
}

func TestReceiptSetIsBounded(t *testing.T) {
	h := newHarness(t, func(o *StoreOptions) { o.KeepReceipts = 2 })
	ctx := context.Background()
	var asked []Snapshot
	for range 3 {
		s := h.ask()
		asked = append(asked, s)
		if _, err := h.store.Answer(ctx, operator, answerFor(s, 0)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: asked[0].Request.RequestID})
	wantCode(t, err, CodeNotFound)
	// An evicted request cannot start a new run, even with the "same" answer.
	_, err = h.store.Answer(ctx, operator, answerFor(asked[0], 0))
	wantCode(t, err, CodeNotFound)
	if n := len(h.continuations()); n != 3 {
		t.Fatalf("continuations = %d", n)
	}
	if _, err := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: asked[2].Request.RequestID}); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotWithoutEvents(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	snap, err := h.store.Get(ctx, captain, GetParams{Conversation: ownerConv})
	if err != nil || snap.Status != StatusNone || snap.Request != nil || snap.Incarnation == "" {
		t.Fatalf("empty snapshot = %+v, %v", snap, err)
	}
	s := h.ask()
	snap, _ = h.store.Get(ctx, captain, GetParams{Conversation: ownerConv})
	if snap.Request.RequestID != s.Request.RequestID || len(snap.Request.Options) != 2 || snap.Request.Options[0].OptionID == "" ||
		snap.Revision != s.Revision || snap.Incarnation != s.Incarnation {
		t.Fatalf("snapshot = %+v", snap)
	}
	h.clk.Advance(time.Minute)
	rec, _ := h.store.Answer(ctx, operator, answerFor(s, 1))
	snap, _ = h.store.Get(ctx, viewer, GetParams{Conversation: ownerConv})
	if snap.Status != StatusAnswered || snap.Receipt.ReceiptID != rec.ReceiptID || snap.Receipt.RunID != rec.RunID || snap.Receipt.OptionID != s.Request.Options[1].OptionID {
		t.Fatalf("terminal snapshot = %+v / %+v", snap, snap.Receipt)
	}
}

func TestIDsAreOpaqueUUIDs(t *testing.T) {
	h := newHarness(t, nil)
	s := h.ask()
	ids := []string{s.Request.RequestID, s.Incarnation, s.Request.Options[0].OptionID, s.Request.Options[1].OptionID}
	seen := map[string]bool{}
	for _, id := range ids {
		if err := checkUUID("id", id); err != nil || seen[id] {
			t.Fatalf("id %q: %v (dup %v)", id, err, seen[id])
		}
		seen[id] = true
	}
	again, _ := h.store.Get(context.Background(), operator, GetParams{Conversation: ownerConv})
	if again.Request.Options[0].OptionID != s.Request.Options[0].OptionID {
		t.Fatal("option IDs changed between reads")
	}
}

// TestFastContinuationFinishesBeforeSubmitReturns reproduces the race where
// the continuation turn ends (FinishRun) before Continue returns: the
// receipt must end finished/failed, never regress to submitted or accepted.
func TestFastContinuationFinishesBeforeSubmitReturns(t *testing.T) {
	cases := []struct {
		name      string
		runErr    error // what the continuation turn ends with; nil: finished
		finish    bool  // FinishRun runs inside Continue
		contErr   error // what Continue returns
		wantState string
		wantMsg   string
	}{
		{name: "finished", finish: true, wantState: RunFinished},
		{name: "turn failed", finish: true, runErr: errors.New("model down"), wantState: RunFailed, wantMsg: "model down"},
		{name: "still running", wantState: RunSubmitted},
		{name: "submit failed", contErr: errors.New("scheduler closed"), wantState: RunFailed, wantMsg: "scheduler closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var store *Store
			var finishErr error
			h := newHarness(t, func(o *StoreOptions) {
				o.Continue = func(ctx context.Context, _, runID string, _ OwnerAnswer) error {
					if tc.finish {
						finishErr = store.FinishRun(ctx, runID, tc.runErr)
					}
					return tc.contErr
				}
			})
			store = h.store
			ctx := context.Background()
			s := h.ask()
			rec, err := h.store.Answer(ctx, operator, answerFor(s, 0))
			if err != nil {
				t.Fatal(err)
			}
			if finishErr != nil {
				t.Fatalf("FinishRun inside Continue: %v", finishErr)
			}
			if rec.Continuation != tc.wantState || !strings.Contains(rec.ContinuationError, tc.wantMsg) {
				t.Fatalf("receipt continuation = %q (%q), want %q (%q)", rec.Continuation, rec.ContinuationError, tc.wantState, tc.wantMsg)
			}
			snap, err := h.store.Get(ctx, operator, GetParams{Conversation: ownerConv, RequestID: s.Request.RequestID})
			if err != nil || snap.Receipt == nil || snap.Receipt.Continuation != tc.wantState {
				t.Fatalf("stored receipt = %+v, %v; want %s", snap.Receipt, err, tc.wantState)
			}
		})
	}
}
