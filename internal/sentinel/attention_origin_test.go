package sentinel

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/memory"
)

// Raven's own cron prompts, heartbeat prompts and proactive notices in
// HISTORY.md are not the owner's deadlines: only the owner's line is listed.
func TestAttentionIgnoresRavensOwnTurns(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	ctx := context.Background()
	hist := h.paths.History
	at := sysT0.Add(-time.Hour)
	lines := []struct{ conv, role, text string }{
		{"cron:j-1", "cron", "[Scheduled job \"standup\" (j-1), due 2025-03-05T09:00:00Z]\nStand-up in 5"},
		{"cron:j-1", "assistant", "Stand-up starts at 2025-03-05 09:00, see you there?"},
		{"heartbeat:main", "heartbeat", "[Heartbeat] A task from HEARTBEAT.md is due now.\n\nTasks:\n- check invoices 2025-03-06"},
		{"heartbeat:main", "assistant", "Invoices checked; next run 2025-03-06 08:00?"},
		{"subagent:s1", "subagent", "Compare trains for 2025-03-07"},
		{"telegram:42", "system", "Notice: job standup disabled on 2025-03-04 after 3 unanswered fires"},
		{"telegram:42", "user", "the lease renewal is due 2025-03-08"},
	}
	for _, l := range lines {
		if err := memory.AppendHistory(hist, at, l.conv, l.role, l.text); err != nil {
			t.Fatal(err)
		}
	}
	h.prov.push(decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	data, err := os.ReadFile(h.paths.Attention)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if !strings.Contains(got, "2025-03-08 (in 4 days, history): the lease renewal is due 2025-03-08") {
		t.Fatalf("owner's deadline missing:\n%s", got)
	}
	for _, bad := range []string{"Scheduled job", "Stand-up", "Heartbeat", "invoices", "trains", "disabled", "2025-03-05", "2025-03-06", "2025-03-07"} {
		if strings.Contains(got, bad) {
			t.Fatalf("attention.md lists Raven's own turn (%q):\n%s", bad, got)
		}
	}
}
