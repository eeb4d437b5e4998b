package predictor

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/statefile"
)

// countingProvider answers every call with reply and counts the calls.
type countingProvider struct {
	calls atomic.Int32
	reply func(n int32) (*llm.Response, error)
}

func (p *countingProvider) Name() string { return "test/counting" }
func (p *countingProvider) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return p.reply(p.calls.Add(1))
}

func analysisReply(args string) func(int32) (*llm.Response, error) {
	return func(int32) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "a", Name: RecordAnalysisTool, Arguments: args}}}, nil
	}
}

func newAnalysisFixture(t *testing.T, p llm.Provider, clk *clock.Fake, store *statefile.Store) *DailyAnalysis {
	t.Helper()
	a, err := NewDailyAnalysis(DailyAnalysisOptions{Provider: p, Store: store, Hour: 6, Location: time.UTC, Clock: clk,
		Input: func(context.Context) (string, string) { return "- send Sam the contract by Friday", "" }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func openStore(t *testing.T, dir string, clk clock.Clock) *statefile.Store {
	t.Helper()
	st, err := statefile.Open(filepath.Join(dir, "state.json"), statefile.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// At most one model call a day, across producers and processes; the
// result is shared; before the hour nothing is called.
func TestDailyAnalysisOneCallADay(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2025, 3, 4, 5, 0, 0, 0, time.UTC))
	p := &countingProvider{reply: analysisReply(`{"commitments":[{"text":"send Sam the contract","due":"Friday"}],"themes":["contract with Sam"]}`)}
	ctx := context.Background()
	a := newAnalysisFixture(t, p, clk, openStore(t, dir, clk))
	if _, ok := a.Latest(ctx); ok || p.calls.Load() != 0 {
		t.Fatalf("before the hour: ok=%v calls=%d", ok, p.calls.Load())
	}
	clk.Set(time.Date(2025, 3, 4, 7, 0, 0, 0, time.UTC))
	an, ok := a.Latest(ctx)
	if !ok || len(an.Commitments) != 1 || an.Commitments[0].Due != "Friday" || an.Themes[0] != "contract with Sam" {
		t.Fatalf("analysis = %+v, %v", an, ok)
	}
	a.Latest(ctx) // a second producer
	peer := newAnalysisFixture(t, p, clk, openStore(t, dir, clk))
	if got, ok := peer.Latest(ctx); !ok || got.Day != "2025-03-04" {
		t.Fatalf("a peer process does not share the result: %+v", got)
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("%d model calls today, want 1", n)
	}
	clk.Set(time.Date(2025, 3, 5, 7, 0, 0, 0, time.UTC))
	a.Latest(ctx)
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("%d calls after a second day, want 2", n)
	}
}

// A failed or malformed answer is not retried the same day, and yesterday's
// analysis stays what the producers show.
func TestDailyAnalysisFailureKeepsYesterday(t *testing.T) {
	good := analysisReply(`{"commitments":[],"themes":["garden"]}`)
	cases := []struct {
		name  string
		reply func(int32) (*llm.Response, error)
		want  string
	}{
		{"model error", func(int32) (*llm.Response, error) { return nil, context.DeadlineExceeded }, "deadline"},
		{"no tool call", func(int32) (*llm.Response, error) { return &llm.Response{Content: "hello"}, nil }, "did not call"},
		{"unknown field", analysisReply(`{"commitments":[],"themes":[],"mood":"great"}`), "mood"},
		{"too many themes", analysisReply(`{"commitments":[],"themes":["a","b","c","d","e","f"]}`), "themes"},
		{"not json", analysisReply(`{"themes":`), "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2025, 3, 4, 7, 0, 0, 0, time.UTC))
			p := &countingProvider{reply: func(n int32) (*llm.Response, error) {
				if n == 1 {
					return good(n)
				}
				return c.reply(n)
			}}
			a := newAnalysisFixture(t, p, clk, openStore(t, t.TempDir(), clk))
			ctx := context.Background()
			a.Latest(ctx)
			clk.Set(time.Date(2025, 3, 5, 7, 0, 0, 0, time.UTC))
			an, ok := a.Latest(ctx)
			if !ok || an.Day != "2025-03-04" || an.Themes[0] != "garden" {
				t.Fatalf("after a failed day: %+v %v, want yesterday's", an, ok)
			}
			att, _ := a.Attempt(ctx)
			if att.Day != "2025-03-05" || !strings.Contains(att.Error, c.want) {
				t.Fatalf("attempt = %+v, want an error naming %q", att, c.want)
			}
			a.Latest(ctx)
			if n := p.calls.Load(); n != 2 {
				t.Fatalf("%d calls, want 2 (no retry the same day)", n)
			}
		})
	}
}

// The day's call waits for the end of the owner's quiet hours.
func TestDailyAnalysisWaitsOutQuietHours(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 3, 4, 7, 0, 0, 0, time.UTC))
	p := &countingProvider{reply: analysisReply(`{"commitments":[],"themes":["garden"]}`)}
	quiet := true
	a, err := NewDailyAnalysis(DailyAnalysisOptions{Provider: p, Store: openStore(t, t.TempDir(), clk), Hour: 6, Location: time.UTC, Clock: clk,
		Quiet: func() bool { return quiet }, Input: func(context.Context) (string, string) { return "", "" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Latest(context.Background()); ok || p.calls.Load() != 0 {
		t.Fatalf("called in quiet hours (%d calls)", p.calls.Load())
	}
	quiet = false
	if _, ok := a.Latest(context.Background()); !ok || p.calls.Load() != 1 {
		t.Fatalf("not called after quiet hours (%d calls)", p.calls.Load())
	}
}
