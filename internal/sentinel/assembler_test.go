package sentinel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

type fakePolicyView struct{}

func (fakePolicyView) SnapshotState() policy.Snapshot {
	return policy.Snapshot{Now: time.Unix(1, 0), DayLeft: 4, Multiplier: 0.8}
}
func (fakePolicyView) FireHistory() map[string]policy.TopicHistory {
	return map[string]policy.TopicHistory{"tax": {Topic: "tax", FiresLastWeek: 2, Dismissed: 1}}
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAssemblerFields(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	write(t, filepath.Join(dir, "MEMORY.md"), "Owner: Ada\n")
	write(t, filepath.Join(dir, "HISTORY.md"), strings.Repeat("old line\n", 100)+"last: paid the bill\n")
	write(t, filepath.Join(dir, "attention.md"), "# Attention\n\n## Focus\nShip v2\n\n## Noise\nignore me\n\n## Deadlines\n- tax 03-15\n")
	write(t, filepath.Join(dir, "behaviors.md"), "# Behaviors\n- 08:00 coffee\n  with oat milk\n- 09:00 standup\n- 12:00 lunch\n")
	a := NewAssembler(AssemblerOptions{
		MemoryPath: filepath.Join(dir, "MEMORY.md"), HistoryPath: filepath.Join(dir, "HISTORY.md"),
		AttentionPath: filepath.Join(dir, "attention.md"), BehaviorsPath: filepath.Join(dir, "behaviors.md"),
		HistoryTailBytes: 25, AttentionSections: []string{"deadlines", "Focus", "Missing"}, BehaviorsLines: 2,
		Sessions: func(_ context.Context, since time.Time) ([]ActiveSession, error) {
			return []ActiveSession{{Key: "old:1", LastActive: since.Add(-time.Minute)}, {Key: "a:1", LastActive: now.Add(-time.Hour)}, {Key: "b:1", LastActive: now.Add(-time.Minute)}}, nil
		},
		Routines: func(h string) []Routine { return []Routine{{Description: "history " + h[:4]}} },
		Calendar: func(time.Time) []CalendarEntry { panic("calendar broke") },
		Policy:   fakePolicyView{}, Clock: clk,
	})
	a.RememberLastDecision(Skip("earlier"))
	pc := a.Assemble(context.Background())
	if pc.MemoryMD != "Owner: Ada\n" {
		t.Errorf("memory %q", pc.MemoryMD)
	}
	if pc.HistoryMDRecent != "last: paid the bill\n" {
		t.Errorf("history tail %q (must start at a line boundary)", pc.HistoryMDRecent)
	}
	if len(pc.ActiveSessions) != 2 || pc.ActiveSessions[0].Key != "b:1" {
		t.Errorf("sessions %+v", pc.ActiveSessions)
	}
	if len(pc.Routines) != 1 || pc.Calendar != nil {
		t.Errorf("routines %+v calendar %+v", pc.Routines, pc.Calendar)
	}
	if pc.AttentionMD != "## deadlines\n- tax 03-15\n\n## Focus\nShip v2\n" {
		t.Errorf("attention %q", pc.AttentionMD)
	}
	if pc.BehaviorsRecent != "- 09:00 standup\n- 12:00 lunch\n" {
		t.Errorf("behaviors %q", pc.BehaviorsRecent)
	}
	if pc.NudgePolicyState.DayLeft != 4 || pc.FireHistory["tax"].Dismissed != 1 {
		t.Errorf("policy %+v %+v", pc.NudgePolicyState, pc.FireHistory)
	}
	if pc.LastDecision == nil || pc.LastDecision.Reason != "earlier" || !pc.Now.Equal(now) {
		t.Errorf("last %+v now %v", pc.LastDecision, pc.Now)
	}
	prompt := RenderContext(pc)
	for _, want := range []string{"Ship v2", "paid the bill", "b:1", "tax: fired 2×", "multiplier: 0.80", "Last decision"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}

func TestAssemblerMissingSources(t *testing.T) {
	dir := t.TempDir()
	a := NewAssembler(AssemblerOptions{MemoryPath: filepath.Join(dir, "nope"), HistoryPath: filepath.Join(dir, "nope2"), AttentionPath: filepath.Join(dir, "x"), AttentionSections: []string{"Focus"}, BehaviorsPath: dir /* a directory: read fails */})
	pc := a.Assemble(context.Background())
	if pc.MemoryMD != "" || pc.HistoryMDRecent != "" || pc.AttentionMD != "" || pc.BehaviorsRecent != "" || pc.LastDecision != nil || pc.ActiveSessions != nil {
		t.Fatalf("%+v", pc)
	}
	if !strings.Contains(RenderContext(pc), "unknown (assume strict)") {
		t.Fatal("missing policy state not rendered as unknown")
	}
}

// BenchmarkTickBigHistory: one full tick (assemble + scripted planner +
// route) with a 100 MB HISTORY.md. The history is read by tail, so time and
// memory do not depend on its size.
func BenchmarkTickBigHistory(b *testing.B) {
	for _, size := range []int64{1 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			hist := filepath.Join(dir, "HISTORY.md")
			f, err := os.Create(hist)
			if err != nil {
				b.Fatal(err)
			}
			// Sparse: extend to size, then write real lines at the end.
			if err := f.Truncate(size); err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(strings.Repeat("2025-03-04 owner: talked about the tax return\n", 400)), size-400*46); err != nil {
				b.Fatal(err)
			}
			f.Close()
			write(b, filepath.Join(dir, "MEMORY.md"), strings.Repeat("fact\n", 200))
			provider := &fakeProvider{resp: toolResp(`{"action":"skip","reason":"nothing new","proactivity_score":0.1}`)}
			clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
			a := NewAssembler(AssemblerOptions{MemoryPath: filepath.Join(dir, "MEMORY.md"), HistoryPath: hist, Policy: fakePolicyView{}, Clock: clk})
			r, err := NewRunner(RunnerOptions{Assembler: a, Planner: NewPlanner(provider, "m", nil), Clock: clk, DedupTTL: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				clk.Advance(2 * time.Minute) // past the dedup TTL: the planner runs every tick
				if out := r.TickOnce(ctx); out.Route != RouteSkip {
					b.Fatalf("route %q", out.Route)
				}
			}
		})
	}
	_ = llm.RoleUser
}
