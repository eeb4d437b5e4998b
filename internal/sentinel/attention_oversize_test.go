package sentinel

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/sentinel/attention"
)

// With the default config, a tick over an attention.md bigger than the
// updater's limit leaves every byte and the mode as the owner had them,
// and the tick itself still runs.
func TestTickKeepsOversizedAttentionWhole(t *testing.T) {
	h := newSysHarness(t, nil)
	ctx := context.Background()
	write(t, h.paths.Memory, "- tax return due 2025-03-06\n")
	var b strings.Builder
	b.WriteString("## Deadlines\nold\n\n## Journal\n")
	for b.Len() <= attention.DefaultMaxBytes {
		b.WriteString("- the owner writes a long journal here, one line a thought\n")
	}
	b.WriteString("\n## Last section\nthe owner's last words\n")
	orig := b.String()
	write(t, h.paths.Attention, orig)
	if err := os.Chmod(h.paths.Attention, 0o644); err != nil {
		t.Fatal(err)
	}
	h.prov.push(decisionJSON("skip", "", nil), decisionJSON("skip", "", nil))
	h.sys.Runner.TickOnce(ctx)
	if h.prov.lastPrompt() == "" {
		t.Fatal("the tick did not reach the planner")
	}
	got, _ := os.ReadFile(h.paths.Attention)
	if string(got) != orig {
		t.Fatalf("attention.md rewritten: %d bytes, was %d", len(got), len(orig))
	}
	if st, _ := os.Stat(h.paths.Attention); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}
