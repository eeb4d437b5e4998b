package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// §11.4 through the binary: deadlines typed the way people write them are
// listed by `raven attention` with what they were read from, numeric dates
// in the owner's locale (en_US: month first).
func TestAttentionShowsInformalDeadlines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Env: []string{"TZ=" + midday.Path, "LANG=en_US.UTF-8"}})
	now := time.Now().In(midday.Loc)
	tomorrow := now.AddDate(0, 0, 1)
	numeric := now.AddDate(0, 0, 5)
	e.WriteFile("workspace/MEMORY.md", "# Memory\n\n- call the plumber tomorrow 9am\n"+
		fmt.Sprintf("- renew the parking permit %02d/%02d\n", int(numeric.Month()), numeric.Day()))
	var rep struct {
		Deadlines []struct {
			At      time.Time `json:"at"`
			HasTime bool      `json:"has_time"`
			Text    string    `json:"text"`
			From    string    `json:"from"`
		} `json:"deadlines"`
		Content string `json:"content"`
	}
	e.MustRun("attention", "--json").JSON(t, &rep)
	if len(rep.Deadlines) != 2 {
		t.Fatalf("deadlines = %+v", rep.Deadlines)
	}
	byText := map[string]int{}
	for i, d := range rep.Deadlines {
		byText[d.From] = i
	}
	i, ok := byText["tomorrow 9am"]
	if d := rep.Deadlines[i]; !ok || !d.HasTime || d.At.In(midday.Loc).Format("2006-01-02 15:04") != tomorrow.Format("2006-01-02")+" 09:00" {
		t.Fatalf("tomorrow 9am resolved wrong: %+v", rep.Deadlines)
	}
	i, ok = byText[fmt.Sprintf("%02d/%02d", int(numeric.Month()), numeric.Day())]
	if d := rep.Deadlines[i]; !ok || d.At.In(midday.Loc).Format("2006-01-02") != numeric.Format("2006-01-02") {
		t.Fatalf("numeric date resolved wrong: %+v", rep.Deadlines)
	}
	if !strings.Contains(rep.Content, `from "tomorrow 9am"`) {
		t.Fatalf("attention.md does not say what it resolved:\n%s", rep.Content)
	}
	plain := e.MustRun("attention").Stdout
	if !strings.Contains(plain, "call the plumber tomorrow 9am") || !strings.Contains(plain, "## Deadlines") {
		t.Fatalf("raven attention:\n%s", plain)
	}
}
