package executor

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// A menu is answerable where it was shown, once it was shown anywhere; a
// newer menu shown in the same session supersedes the older one there.
func TestPendingShowMakesMenuAnswerableWhereShown(t *testing.T) {
	ctx := context.Background()
	s := NewPendingDecisionStore(filepath.Join(t.TempDir(), "pending.json"), 0, clock.NewFake(t0))
	opts := []Option{{Title: "a", Kind: KindReply}}
	old, err := s.Put(ctx, PendingDecision{Session: "telegram:1", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	pd, err := s.Put(ctx, PendingDecision{Session: "tui:main", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	active := func(session string) string {
		t.Helper()
		d, ok, err := s.Active(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		return d.ID
	}
	if active("tui:main") != pd.ID || active("telegram:1") != old.ID {
		t.Fatal("before Show, a menu answers in its planned session")
	}
	if err := s.Show(ctx, pd.ID, "telegram:1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ session, want string }{
		{"telegram:1", pd.ID}, // shown there; the older menu there is superseded
		{"tui:main", ""},      // planned there, never shown there
	} {
		if got := active(tc.session); got != tc.want {
			t.Errorf("Active(%s) = %q, want %q", tc.session, got, tc.want)
		}
	}
	if err := s.Unshow(ctx, pd.ID, "telegram:1"); err != nil {
		t.Fatal(err)
	}
	if active("tui:main") != pd.ID {
		t.Fatal("after Unshow of its only session, the menu answers in its planned session again")
	}
	if err := s.Show(ctx, old.ID, "cli:direct"); !errors.Is(err, ErrNoPendingDecision) {
		t.Fatalf("Show of a superseded menu = %v", err)
	}
}

// The dispatcher shows a menu in each target before posting there (an
// instant answer finds it) and takes it back where the post failed.
func TestDispatchOptionsShowsMenuWhereDelivered(t *testing.T) {
	ctx := context.Background()
	s := NewPendingDecisionStore(filepath.Join(t.TempDir(), "pending.json"), 0, clock.NewFake(t0))
	pd, err := s.Put(ctx, PendingDecision{Session: "tui:main", Options: []Option{{Title: "a", Kind: KindReply}}})
	if err != nil {
		t.Fatal(err)
	}
	var answerableAtPost bool
	post := func(ctx context.Context, m spine.Message) error {
		if m.Channel == "webhook" {
			return errors.New("webhook down")
		}
		d, ok, _ := s.Active(ctx, m.Channel+":"+m.ChatID)
		answerableAtPost = ok && d.ID == pd.ID
		return nil
	}
	d := NewDispatcher(DispatcherOptions{Post: post, Menus: s, Targets: func(string) []Target {
		return []Target{{Channel: "telegram", ChatID: "1"}, {Channel: "webhook", ChatID: "2"}}
	}})
	if res := d.DispatchOptions(ctx, pd); !res.Delivered {
		t.Fatalf("%+v", res)
	}
	if !answerableAtPost {
		t.Fatal("menu not answerable on telegram when it was posted there")
	}
	all, _ := s.List(ctx)
	if got := all[0].Shown; len(got) != 1 || got[0] != "telegram:1" {
		t.Fatalf("Shown = %v, want [telegram:1]", got)
	}
}
