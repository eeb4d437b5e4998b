package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// Jobs changed from the CLI while a gateway runs go into the journal
// beside jobs.json (one line each, no rewrite of the file), and the
// gateway's cron service folds them in: the added job fires there, the
// removed one is gone from the list.
func TestCronJournalFromCLIReachesGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	ev := e.Subscribe()
	first := strings.TrimSpace(e.MustRun("cron", "add", "--name", "water", "--message", "Drink water", "--every", "1h").Stdout)
	before, err := os.ReadFile(filepath.Join(e.DataDir, "cron", "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	second := strings.TrimSpace(e.MustRun("cron", "add", "--name", "stretch", "--message", "Stretch now", "--every", "1s", "--deliver").Stdout)
	third := strings.TrimSpace(e.MustRun("cron", "add", "--name", "tax", "--message", "File the tax return", "--every", "24h").Stdout)
	e.MustRun("cron", "remove", third)
	after, _ := os.ReadFile(filepath.Join(e.DataDir, "cron", "jobs.json"))
	if string(before) != string(after) {
		t.Fatalf("jobs.json rewritten by journaled changes:\n%s\n%s", before, after)
	}
	journal, err := os.ReadFile(filepath.Join(e.DataDir, "cron", "jobs.journal.jsonl"))
	// The gateway's fires of "stretch" are journaled too: look for ours.
	if err != nil || !strings.Contains(string(journal), `"id":"`+second+`"`) || !strings.Contains(string(journal), `"del":"`+third+`"`) {
		t.Fatalf("journal: %q %v", journal, err)
	}
	ev.WaitFor(10*time.Second, "cron.fired for "+second, func(x eventlog.Event) bool {
		var p struct {
			JobID string `json:"job_id"`
		}
		return x.Kind == "cron.fired" && json.Unmarshal(x.Payload, &p) == nil && p.JobID == second
	})
	var jobs []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(e.MustRun("cron", "list", "--json").Stdout), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != first || jobs[1].ID != second {
		t.Fatalf("cron list --json = %+v, want %s and %s", jobs, first, second)
	}
	if out := e.MustRun("cron", "list").Stdout; !strings.Contains(out, "water") || !strings.Contains(out, "stretch") || strings.Contains(out, "tax") {
		t.Fatalf("cron list:\n%s", out)
	}
	g.Stop()
}
