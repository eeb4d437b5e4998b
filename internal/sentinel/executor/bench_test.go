package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// Modify runs on every reply: with nothing queued it is one state-file
// look; with an inject queued it re-checks it against the real policy
// before claiming it.
func BenchmarkInjectorModify(b *testing.B) {
	for _, queued := range []bool{false, true} {
		name := "empty"
		if queued {
			name = "one_inject_rechecked"
		}
		b.Run(name, func(b *testing.B) {
			clk := clock.NewFake(t0)
			st, err := statefile.Open(filepath.Join(b.TempDir(), "state.json"), statefile.Options{Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			// Default layers, but room for b.N injects in one session.
			cfg := policy.DefaultConfig()
			cfg.Location = time.UTC
			cfg.QuietHours = policy.DayWindow{}
			cfg.DayQuota, cfg.TopicDayQuota, cfg.TopicWeekQuota, cfg.LedgerCap = 1<<30, 1<<30, 1<<30, 1<<30
			pol, err := policy.New(cfg, policy.Options{Clock: clk, Store: st})
			if err != nil {
				b.Fatal(err)
			}
			in, err := NewInjector(InjectorOptions{Store: st, Gate: pol, Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if queued {
					b.StopTimer()
					// A fresh session and message each round, so the
					// policy's cooldown and dedup allow the queue.
					clk.Advance(time.Hour)
					if r := in.Queue(ctx, Nudge{Message: "btw " + clk.Now().String(), Topic: clk.Now().String(), Session: "tg:1"}); !r.Queued {
						b.Fatal(r)
					}
					b.StartTimer()
				}
				if got := in.Modify("tg:1", "reply"); queued == (got == "reply") {
					b.Fatalf("modify %q", got)
				}
				if queued {
					b.StopTimer()
					in.Settle("tg:1", true)
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkPendingActive is the consumer hook's lookup on every owner
// message: a retained week of menus, each shown in two sessions.
func BenchmarkPendingActive(b *testing.B) {
	ctx := context.Background()
	s := NewPendingDecisionStore(filepath.Join(b.TempDir(), "pending.json"), 0, clock.NewFake(t0))
	for i := range 20 {
		pd, err := s.Put(ctx, PendingDecision{Session: fmt.Sprintf("tui:s%d", i), Options: []Option{{Title: "a", Kind: KindReply}}})
		if err != nil {
			b.Fatal(err)
		}
		for _, sess := range []string{fmt.Sprintf("telegram:%d", i), "cli:direct"} {
			if err := s.Show(ctx, pd.ID, sess); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.Active(ctx, "cli:direct"); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
