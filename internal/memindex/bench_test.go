package memindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/session"
)

var benchWords = strings.Fields("dentist tax return flight paris kayak plumber invoice garden birthday meeting lunch report " +
	"groceries train ticket doctor gym budget email draft review school pickup insurance car service weekend hike")

// yearOfHistory writes one HISTORY.md entry per hour for a year (8,760)
// and indexes it.
func yearOfHistory(b *testing.B) *fixture {
	f := newFixture(b)
	os.MkdirAll(filepath.Dir(f.hist), 0o700)
	var sb strings.Builder
	for h := range 365 * 24 {
		at := t0.Add(time.Duration(h) * time.Hour)
		w := func(k int) string { return benchWords[(h*7+k*13)%len(benchWords)] }
		fmt.Fprintf(&sb, "- %s [cli:local] user: remind me about the %s and the %s before %s, and note the %s\n",
			at.Format(time.RFC3339), w(1), w(2), w(3), w(4))
	}
	os.WriteFile(f.hist, []byte(sb.String()), 0o600)
	if err := f.ix.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkSearchYearOfHistory(b *testing.B) {
	f := yearOfHistory(b)
	ctx := context.Background()
	for _, q := range []Query{
		{Text: "dentist"},
		{Text: "paris flight"},
		{Text: "kayak", Since: t0.AddDate(0, 11, 0)},
		{Text: "nothing matches this"},
	} {
		b.Run(strings.ReplaceAll(q.Text, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.ix.Search(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSyncTurn is the index update after one turn: two HISTORY.md
// lines and three session messages (one a tool result, not indexed) on top
// of a year of history.
func BenchmarkSyncTurn(b *testing.B) {
	f := yearOfHistory(b)
	ctx := context.Background()
	at := t0.AddDate(1, 0, 0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		at = at.Add(time.Minute)
		f.history(b, at, "user", "what about the dentist")
		f.history(b, at, "assistant", "Thursday at 10.")
		if err := f.sessions.Append(ctx,
			session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "what about the dentist"}, Conversation: "cli:local", Channel: "cli", Origin: "user", At: at},
			session.Entry{Message: llm.Message{Role: llm.RoleTool, Content: "calendar", ToolCallID: "c1"}, Conversation: "cli:local", Channel: "cli", Origin: "user", At: at},
			session.Entry{Message: llm.Message{Role: llm.RoleAssistant, Content: "Thursday at 10."}, Conversation: "cli:local", Channel: "cli", Origin: "user", At: at},
		); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := f.ix.SyncTurn(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchP50 cycles through queries of every shape (one common
// word, two words, a since bound, no match, a hostile query) over a year of
// hourly history and reports the median and 99th percentile latency.
func BenchmarkSearchP50(b *testing.B) {
	f := yearOfHistory(b)
	ctx := context.Background()
	qs := []Query{
		{Text: "dentist"}, {Text: "paris flight"}, {Text: "tax return"}, {Text: "garden", Since: t0.AddDate(0, 11, 0)},
		{Text: "birthday", Limit: 20}, {Text: "nothing matches this"}, {Text: `"kayak" OR (plumber* NOT`}, {Text: "insurance car service"},
	}
	var took []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := f.ix.Search(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkBackfill is the first sync of a data dir with a year of history:
// what the first search after an upgrade pays once.
func BenchmarkBackfill(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		f := newFixture(b)
		os.MkdirAll(filepath.Dir(f.hist), 0o700)
		var sb strings.Builder
		for h := range 365 * 24 {
			fmt.Fprintf(&sb, "- %s [cli:local] user: entry %d about the %s\n", t0.Add(time.Duration(h)*time.Hour).Format(time.RFC3339), h, benchWords[h%len(benchWords)])
		}
		os.WriteFile(f.hist, []byte(sb.String()), 0o600)
		b.StartTimer()
		if err := f.ix.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
