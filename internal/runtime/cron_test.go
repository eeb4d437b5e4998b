package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// A standalone cron service shares the gateway's coupling: a fire is
// written to the Sentinel's policy ledger, and an owner reply in the
// session store since the previous fire keeps the job from decaying.
func TestCronServerLedgerAndDecay(t *testing.T) {
	cases := []struct {
		name         string
		ownerReplied bool
		wantEnabled  bool
	}{
		{name: "owner replied elsewhere", ownerReplied: true, wantEnabled: true},
		{name: "no reply", ownerReplied: false, wantEnabled: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := config.NewPaths(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.Model = "openai/gpt-4o-mini" // ignored: the standalone service runs no model
			cfg.Cron.DecayAfter = 2
			cfg.Sentinel.Policy.Location = time.UTC
			clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
			var out syncBuffer
			// As `raven cron serve` builds it: no model, the cron service
			// running, the terminal attached as cli:direct.
			srv, err := Build(ctx, Options{Paths: p, Config: cfg, Clock: clk, NoModel: true, Services: ServiceCron})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close(ctx)
			if _, err := srv.Attach(ctx, CLIConversation, SurfaceFunc(func(_ context.Context, m spine.Message) error {
				id, _ := m.Extras["cron_job_id"].(string)
				_, err := fmt.Fprintf(&out, "[cron %s] %s\n", id, m.Content)
				return err
			})); err != nil {
				t.Fatal(err)
			}
			if srv.Provider() != nil {
				t.Fatal("standalone cron service built a model")
			}
			job, err := cron.NewJob(cron.Spec{Name: "stretch", Message: "stand up", Every: "1h", Deliver: true, Channel: "cli", To: "direct"}, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			store := cron.NewStore(p.CronJobs(), clk, nil, 10*time.Second)
			if job, err = store.Add(ctx, job); err != nil {
				t.Fatal(err)
			}
			srv.Cron().Poke()
			runs := cron.NewRunLog(p.CronRuns())
			due := clk.Now()
			fire := func(n int) {
				t.Helper()
				// Move to the due time, then nudge the service's capped sleep
				// forward in small steps: it may not be asleep yet, and other
				// fake timers (a job's timeout) can be pending meanwhile.
				due = due.Add(time.Hour)
				clk.Set(due)
				eventually(t, fmt.Sprintf("fire %d recorded", n), func() bool {
					rs, err := runs.Tail(job.ID, n)
					if err == nil && len(rs) == n {
						return true
					}
					if clk.Waiters() > 0 {
						clk.Advance(100 * time.Millisecond)
					}
					return false
				})
				rs, _ := runs.Tail(job.ID, 1)
				if rs[0].Outcome != cron.StatusDelivered {
					t.Fatalf("fire %d = %+v", n, rs[0])
				}
			}
			fire(1)
			if want := fmt.Sprintf("[cron %s] stand up\n", job.ID); out.String() != want {
				t.Fatalf("stdout = %q, want %q", out.String(), want)
			}
			if h := srv.Sentinel().Policy.FireHistory()[policy.DeriveTopic(job.Message)]; h.CronFires != 1 {
				t.Fatalf("policy ledger history = %+v, want one cron fire", h)
			}
			if tc.ownerReplied {
				if err := srv.Sessions().Append(ctx, session.Entry{
					Message:      llm.Message{Role: llm.RoleUser, Content: "done"},
					Conversation: "cli:direct", Channel: "cli", ChatID: "direct", Origin: "user", At: clk.Now().Add(time.Minute),
				}); err != nil {
					t.Fatal(err)
				}
			}
			fire(2)
			got, err := store.Get(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Enabled != tc.wantEnabled {
				t.Fatalf("enabled = %v (%s), want %v", got.Enabled, got.DisabledReason, tc.wantEnabled)
			}
		})
	}
}
