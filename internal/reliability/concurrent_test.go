//go:build reliability

package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentProcesses runs writers of different commands at once on one
// data dir — 4 processes adding cron jobs, 2 recording nudge feedback (the
// JSONL log and state.json), one setting preferences and one clearing the
// inbox — and checks the counts are exact afterwards. The cron service's own
// multi-process claims are internal/cron/proc_test.go's; this is the
// cross-command mix.
func TestConcurrentProcesses(t *testing.T) {
	m := iters(25, 150)
	dir := filepath.Join(t.TempDir(), "d")
	model := newDataDir(t, dir)
	nudge := firstNudge(t, dir, model)
	before, err := cronIDs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	type writer struct {
		name string
		args func(w, i int) []string
	}
	writers := []writer{}
	for w := 0; w < 4; w++ {
		writers = append(writers, writer{"cron-add", func(w, i int) []string {
			return []string{"cron", "add", "--name", fmt.Sprintf("c%d-%d", w, i), "--message", "m", "--every", "1h"}
		}})
	}
	for w := 0; w < 2; w++ {
		writers = append(writers, writer{"feedback", func(w, i int) []string {
			return []string{"nudges", "feedback", nudge, "neutral", "--reason", fmt.Sprintf("cc-%d-%d-end", w, i)}
		}})
	}
	writers = append(writers,
		writer{"prefs", func(w, i int) []string {
			return []string{"sentinel", "prefs", "set", "muted_topics", fmt.Sprintf("mt-%d", i)}
		}},
		writer{"inbox-clear", func(w, i int) []string { return []string{"inbox", "clear"} }})

	var runs, failures atomic.Int64
	var wg sync.WaitGroup
	for w, wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < m; i++ {
				runs.Add(1)
				if r := raven(t, dir, wr.args(w, i)...); r.code != 0 {
					failures.Add(1)
					t.Errorf("%s %d/%d: exit %d: %s%s", wr.name, w, i, r.code, r.out, r.errOut)
				}
			}
		}()
	}
	wg.Wait()

	ids, err := cronIDs(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(before) + 4*m; len(ids) != want {
		failures.Add(1)
		t.Errorf("jobs = %d, want %d", len(ids), want)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			failures.Add(1)
			t.Errorf("duplicate job id %s", id)
		}
		seen[id] = true
	}
	recs, torn, err := jsonlCheck(filepath.Join(dir, "sentinel", "feedback.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, r := range recs {
		if strings.Contains(r, `"cc-`) {
			got++
		}
	}
	if got != 2*m || torn != 0 {
		failures.Add(1)
		t.Errorf("feedback records = %d (torn %d), want %d", got, torn, 2*m)
	}
	prefs, err := os.ReadFile(filepath.Join(dir, "sentinel", "preferences.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		if !strings.Contains(string(prefs), fmt.Sprintf(`"mt-%d"`, i)) {
			failures.Add(1)
			t.Errorf("muted topic mt-%d lost: %s", i, prefs)
		}
	}
	if err := doctorOK(t, dir); err != nil {
		failures.Add(1)
		t.Error(err)
	}
	counts(t, "concurrent", "processes", len(writers), "commands", runs.Load(), "jobs", len(ids)-len(before),
		"feedback_records", got, "failures", failures.Load())
}
