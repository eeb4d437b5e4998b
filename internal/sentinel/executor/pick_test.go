package executor

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// A pick holds its menu while it runs, closes it only on success, and a
// claim whose process died frees the menu after pickClaimTimeout.
func TestPendingClaimSettle(t *testing.T) {
	tests := []struct {
		name      string
		from      string // state before the claim
		done      bool
		advance   time.Duration // instead of settling: the claimant died
		wantState string
		wantOpen  bool
	}{
		{"success closes", StateOpen, true, 0, StateDone, false},
		{"failure reopens", StateOpen, false, 0, StateOpen, true},
		{"failure after confirm awaits confirm again", StateAwaitingConfirm, false, 0, StateAwaitingConfirm, true},
		{"claim within the timeout holds the menu", StateOpen, false, time.Minute, StateExecuting, false},
		{"stale claim frees the menu", StateOpen, false, pickClaimTimeout, StateOpen, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			s := NewPendingDecisionStore(filepath.Join(t.TempDir(), "pending.json"), 0, clk)
			ctx := context.Background()
			pd, err := s.Put(ctx, PendingDecision{Session: "tg:1", Options: []Option{{Title: "A", Kind: KindReply}}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.from == StateAwaitingConfirm {
				if _, err := s.Transition(ctx, pd.ID, StateAwaitingConfirm, 1); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Claim(ctx, pd.ID, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, pd.ID, 1); !errors.Is(err, ErrNoPendingDecision) {
				t.Fatalf("second claim while the pick runs: %v", err)
			}
			if tc.advance > 0 {
				clk.Advance(tc.advance)
			} else if _, err := s.Settle(ctx, pd.ID, tc.done); err != nil {
				t.Fatal(err)
			}
			cur, open, err := s.Active(ctx, "tg:1")
			if err != nil || open != tc.wantOpen {
				t.Fatalf("open %v (%v), want %v", open, err, tc.wantOpen)
			}
			if open && cur.State != tc.wantState {
				t.Fatalf("active state %q, want %q", cur.State, tc.wantState)
			}
			all, _ := s.List(ctx)
			if !open && all[0].State != tc.wantState {
				t.Fatalf("state %q, want %q", all[0].State, tc.wantState)
			}
		})
	}
}

// A micro-agent that fails to start costs nothing and reports nothing.
func TestSpawnRunFailureNotCharged(t *testing.T) {
	g := &fakeGate{}
	delivered := 0
	sp := NewSpawn(SpawnOptions{Gate: g,
		Run: func(context.Context, string, SpawnDone) error { return errors.New("no model") },
		Deliver: func(context.Context, Nudge, string) Result {
			delivered++
			return Result{Delivered: true}
		}})
	r := sp.Dispatch(context.Background(), SpawnRequest{Task: "digest", Session: "tg:1", Priority: policy.PriorityLow})
	if r.Delivered || r.Error == "" || g.firedN() != 0 || delivered != 0 {
		t.Fatalf("%+v fired %d delivered %d", r, g.firedN(), delivered)
	}
}
