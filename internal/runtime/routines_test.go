package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
)

// Learned routines persist in sentinel/routines.json through the assembled
// runtime with the default config: the planner sees them, and a restart
// starts from the file.
func TestRoutinesPersistAcrossRestart(t *testing.T) {
	var b strings.Builder
	// Everyday chat at other hours, so 17:00 on Thursdays stands out.
	topics := []string{"invoice", "parcel", "budget", "recipe", "printer", "garden", "passport"}
	for day := 1; day <= 28; day++ {
		for i, h := range []int{9, 12, 20} {
			fmt.Fprintf(&b, "- 2025-02-%02dT%02d:%02d:00Z [telegram:1] user: what about the %s\n", day, h, (day*7)%60, topics[(day+i)%len(topics)])
		}
	}
	for _, d := range []string{"2025-02-06", "2025-02-13", "2025-02-20", "2025-02-27"} {
		fmt.Fprintf(&b, "- %sT17:00:00Z [telegram:1] user: heading to the gym for a workout\n", d)
		fmt.Fprintf(&b, "- %sT17:01:00Z [telegram:1] assistant: Have a good workout!\n", d)
	}
	sorted := strings.Split(strings.TrimSpace(b.String()), "\n")
	slices.Sort(sorted)
	history := strings.Join(sorted, "\n") + "\n"
	var dataDir string
	a, _ := newSentinelApp(t, false, []llm.Turn{}, func(o *Options) {
		dataDir = o.Paths.Root
		if err := os.MkdirAll(filepath.Dir(o.Paths.History()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(o.Paths.History(), []byte(history), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	rs := a.Sentinel().Assembler.Assemble(context.Background()).Routines
	if len(rs) != 1 || !strings.Contains(rs[0].Description, "gym") || !strings.Contains(rs[0].When, "Thu") {
		t.Fatalf("routines = %+v", rs)
	}
	state, err := os.ReadFile(filepath.Join(dataDir, "sentinel", "routines.json"))
	if err != nil || !strings.Contains(string(state), "heading to the gym") {
		t.Fatalf("routines.json: %v\n%s", err, state)
	}
	if strings.Contains(string(state), "Have a good workout") {
		t.Fatal("routines.json keeps Raven's replies; only the owner's messages count")
	}
	// Restart with HISTORY.md gone: the routines come from routines.json.
	a.Close(context.Background())
	if err := os.Remove(filepath.Join(dataDir, "workspace", "memory", "HISTORY.md")); err != nil {
		t.Fatal(err)
	}
	b2, _ := newSentinelApp(t, false, []llm.Turn{}, func(o *Options) {
		p, err := config.NewPaths(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		o.Paths = p
	})
	if rs2 := b2.Sentinel().Assembler.Assemble(context.Background()).Routines; len(rs2) != 1 || rs2[0].Description != rs[0].Description {
		t.Fatalf("after restart: %+v", rs2)
	}
}
