package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/eventlog"
)

// A job added from the CLI is picked up by the running gateway and fires
// there (cron.fired on the control socket's event stream).
func TestCronJobAddedFromCLIFiresInGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	ev := e.Subscribe()
	id := strings.TrimSpace(e.MustRun("cron", "add", "--name", "standup", "--message", "Stand-up in 5 minutes", "--every", "1s", "--deliver").Stdout)
	fired := ev.WaitFor(10*time.Second, "cron.fired for "+id, func(x eventlog.Event) bool {
		var p struct {
			JobID string `json:"job_id"`
		}
		return x.Kind == "cron.fired" && json.Unmarshal(x.Payload, &p) == nil && p.JobID == id
	})
	if fired.Conversation != "cron:"+id {
		t.Fatalf("cron.fired = %+v", fired)
	}
	e.MustRun("cron", "remove", id)
	g.Stop()
}
