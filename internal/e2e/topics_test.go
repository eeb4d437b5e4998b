package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/eventlog"
)

func (ev *Events) waitCronFired(id string, within time.Duration) {
	ev.e.T.Helper()
	ev.WaitFor(within, "cron.fired for "+id, func(x eventlog.Event) bool {
		var p struct {
			JobID string `json:"job_id"`
		}
		return x.Kind == "cron.fired" && json.Unmarshal(x.Payload, &p) == nil && p.JobID == id
	})
}

// §2.6: a cron fire suppresses a Sentinel nudge on the same topic as the
// Sentinel derives topics from the text, not on the job's name (the job is
// named "daily-ping", its message says "Stand-up in 5"; the planner's
// nudge says "Reminder: stand-up in 5 minutes").
func TestCronFireSuppressesSameTopicNudge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanSequence(Decision(map[string]any{"action": "skip", "reason": "start-up tick", "proactivity_score": 0}),
		Decision(nudge("Reminder: stand-up in 5 minutes", nil)))
	g := e.StartGateway()
	ev := e.Subscribe()
	tickEvent(ev, 10*time.Second) // the start-up tick, a skip
	at := time.Now().Add(2 * time.Second).Format(time.RFC3339)
	id := strings.TrimSpace(e.MustRun("cron", "add", "--name", "daily-ping", "--message", "Stand-up in 5", "--at", at, "--deliver").Stdout)
	ev.waitCronFired(id, 15*time.Second)
	rec := e.Tick()
	if rec.Allowed == nil || *rec.Allowed || (rec.Layer != "dedup" && !strings.HasPrefix(rec.Layer, "topic")) || rec.Delivered {
		t.Fatalf("same-topic nudge after the cron fire: %s\n%s", rec, g.Log())
	}
	t.Logf("denied by %s: %s", rec.Layer, rec.VerdictReason)
	g.Stop()
}
