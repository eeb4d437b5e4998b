package sentinel

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// A cron fire covers its topic as the Sentinel derives topics from a
// message, not under the job's name: after "Stand-up in 5" fires from a job
// named job1, the planner's "Reminder: stand-up in 5 minutes" is denied by
// the shipped policy's dedup layer.
func TestCronFireSuppressesSentinelNudgeOnSameTopic(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	ctx := context.Background()
	hub := spine.NewHub(nil)
	hub.Register("telegram", spine.OutletFunc(func(context.Context, spine.Message) error { return nil }))
	fh := cron.NewFireHandler(cron.FireOptions{Hub: hub, RecordFire: h.sys.Policy.RecordCronFire})
	job := cron.Job{ID: "j-1", Name: "job1", Message: "Stand-up in 5", Deliver: true, Channel: "telegram", To: "42", Enabled: true}
	out, err := fh.Handle(ctx, job, h.clk.Now())
	if err != nil || out.Status != cron.StatusDelivered {
		t.Fatalf("cron fire: %+v %v", out, err)
	}
	h.clk.Advance(2 * time.Minute)
	h.prov.push(decisionJSON("nudge", "Reminder: stand-up in 5 minutes", map[string]any{"target_session": "telegram:42"}))
	tick := h.sys.Runner.TickOnce(ctx)
	if tick.Delivered() || tick.Verdict == nil || tick.Verdict.Layer != policy.LayerDedup {
		t.Fatalf("nudge after the cron fire: verdict %+v, delivered %v", tick.Verdict, tick.Delivered())
	}
	if n := h.postedN(); n != 0 {
		t.Fatalf("%d sentinel messages posted", n)
	}
}
