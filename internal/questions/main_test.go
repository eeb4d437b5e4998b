package questions

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)

type fakeControllers struct {
	mu     sync.Mutex
	leases map[string]string
}

func (f *fakeControllers) ActiveController(_ context.Context, conv string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.leases[conv]
	return n, ok
}

func (f *fakeControllers) set(conv, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leases[conv] = name
}

type cred struct {
	gen    int
	active bool
}

type fakeCredentials struct {
	mu    sync.Mutex
	creds map[string]cred
}

func (f *fakeCredentials) CredentialGeneration(_ context.Context, name string) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.creds[name]
	return c.gen, ok && c.active, nil
}

func (f *fakeCredentials) set(name string, gen int, active bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creds[name] = cred{gen, active}
}

type recordedEvent struct {
	kind, conv string
	payload    any
}

type harness struct {
	t       testing.TB
	clk     *clock.Fake
	store   *Store
	ctrl    *fakeControllers
	creds   *fakeCredentials
	ws      string
	mu      sync.Mutex
	events  []recordedEvent
	conts   []string // run IDs handed to Continue
	contErr error
}

var (
	operator  = auth.Principal{Name: "owner", Role: auth.RoleOperator, Generation: 1}
	tablet    = auth.Principal{Name: "tablet", Role: auth.RoleDevice, Generation: 1}
	phone     = auth.Principal{Name: "phone", Role: auth.RoleDevice, Generation: 1}
	viewer    = auth.Principal{Name: "viewer", Role: auth.RoleDevice, ReadOnly: true, Generation: 1}
	captain   = auth.Principal{Name: "ci", Role: auth.RoleCaptain, Generation: 1}
	tuiOwner  = "tui-owner"
	ownerConv = "tui:main"
)

func newHarness(t testing.TB, mod func(*StoreOptions)) *harness {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{
		t:     t,
		clk:   clock.NewFake(t0),
		ctrl:  &fakeControllers{leases: map[string]string{}},
		creds: &fakeCredentials{creds: map[string]cred{}},
		ws:    t.TempDir(),
	}
	for _, p := range []auth.Principal{operator, tablet, phone, viewer, captain} {
		h.creds.set(p.Name, p.Generation, true)
	}
	h.creds.set(tuiOwner, 1, true)
	opts := StoreOptions{
		Clock: h.clk,
		Emit: func(_ context.Context, kind, conv string, payload any) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.events = append(h.events, recordedEvent{kind, conv, payload})
			return nil
		},
		Continue: func(_ context.Context, conv, runID string, a OwnerAnswer) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.conts = append(h.conts, runID)
			return h.contErr
		},
		Authority: Authority{Controllers: h.ctrl, Credentials: h.creds},
	}
	if mod != nil {
		mod(&opts)
	}
	h.store, err = OpenStore(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.CreateConversation(context.Background(), ConversationSpec{
		ID: ownerConv, Kind: KindOwner, Workspace: h.ws, Owner: tuiOwner, OwnerGeneration: 1,
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// ask leaves a choice question and returns its snapshot.
func (h *harness) ask() Snapshot {
	h.t.Helper()
	s, err := h.store.Ask(context.Background(), ownerConv, NewQuestion{Question: "Tabs or spaces?", Options: []string{"tabs", "spaces"}, AllowText: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func answerFor(s Snapshot, option int) AnswerParams {
	return AnswerParams{Conversation: s.Conversation, RequestID: s.Request.RequestID, Incarnation: s.Incarnation,
		Revision: s.Revision, OptionID: s.Request.Options[option].OptionID}
}

func raw(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) continuations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.conts...)
}

func (h *harness) eventsOf(kind string) []recordedEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []recordedEvent
	for _, e := range h.events {
		if e.kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := CodeOf(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}
