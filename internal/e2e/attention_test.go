package e2e

import (
	"strings"
	"testing"
	"time"
)

// §2.12: Raven's own cron prompts (and its replies to them) never appear
// as Deadlines or Open loops in attention.md, while the owner's own dated
// line from the same HISTORY.md does.
func TestCronPromptsStayOutOfAttention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Env: []string{"TZ=" + midday.Path}})
	day := time.Now().In(midday.Loc)
	ownerDate := day.AddDate(0, 0, 2).Format("2006-01-02")
	cronDate := day.AddDate(0, 0, 3).Format("2006-01-02")
	e.MustRun("chat", "-m", "my dentist appointment is on "+ownerDate+" 10:00")
	g := e.StartGateway()
	ev := e.Subscribe()
	at := time.Now().Add(2 * time.Second).Format(time.RFC3339)
	id := strings.TrimSpace(e.MustRun("cron", "add", "--name", "report", "--message", "Ask whether the quarterly report due "+cronDate+" is filed?", "--at", at, "--deliver").Stdout)
	ev.waitCronFired(id, 15*time.Second)
	g.Stop()
	if h := e.ReadFile("workspace/memory/HISTORY.md"); !strings.Contains(h, "cron:"+id) || !strings.Contains(h, cronDate) {
		t.Fatalf("the cron turn is not in HISTORY.md (nothing to filter):\n%s", h)
	}
	e.Tick() // refreshes attention.md
	att := e.ReadFile("workspace/user_memory/attention.md")
	if !strings.Contains(att, ownerDate) || !strings.Contains(att, "dentist") {
		t.Fatalf("attention.md lacks the owner's own deadline:\n%s", att)
	}
	if strings.Contains(att, cronDate) || strings.Contains(att, "quarterly report") || strings.Contains(att, "Scheduled job") {
		t.Fatalf("a cron prompt reached attention.md:\n%s", att)
	}
}
