package sentinel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// The learner runs on every dismissal: its cost is bounded by the learn
// window's tail of feedback.jsonl, not by the file (here a year of a nudge
// every 20 minutes, of which the last two weeks are read).
func BenchmarkPreferenceLearn(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "feedback.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	end := time.Date(2025, 12, 31, 12, 0, 0, 0, time.UTC)
	start := end.Add(-365 * 24 * time.Hour)
	n := 0
	for at := start; at.Before(end); at = at.Add(20 * time.Minute) {
		id := fmt.Sprintf("n-%d", n)
		n++
		for _, r := range []feedback.Record{
			{Time: at, Event: feedback.EventDispatched, NudgeID: id, Topic: fmt.Sprintf("topic-%d", n%40), Source: feedback.SourceSentinel, Content: "A reminder about something the owner cares about, of a typical length for a nudge."},
			{Time: at.Add(time.Minute), Event: []string{feedback.EventAccepted, feedback.EventDismissed, feedback.EventNeutral}[n%3], NudgeID: id},
		} {
			line, _ := json.Marshal(r)
			w.Write(append(line, '\n'))
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	clk := clock.NewFake(end)
	cfg := policy.DefaultConfig()
	cfg.Location = time.UTC
	l, err := NewPreferenceLearner(PreferenceLearnerOptions{Path: filepath.Join(dir, "preferences.json"), Feedback: feedback.NewTracker(path, feedback.Options{Clock: clk}), Policy: cfg, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Learn(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
}
