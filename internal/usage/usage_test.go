package usage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func openStore(t testing.TB) *Store {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fixed answers every call with the same usage.
type fixed struct {
	u     llm.Usage
	calls int
}

func (f *fixed) Name() string { return "openai/gpt-4o-mini" }
func (f *fixed) Chat(context.Context, llm.Request) (*llm.Response, error) {
	f.calls++
	return &llm.Response{Content: "ok", Usage: f.u}, nil
}

func TestCostAndCapStatus(t *testing.T) {
	cfg := Config{
		Caps:   map[string]Cap{"sentinel": {DailyTokens: 1000, MonthlyUSD: 1}, ScopeTotal: {DailyTokens: 10}},
		Prices: map[string]Price{"gpt-4o-mini": {Input: 0.15, Output: 0.6, Cached: 0.075}},
	}
	tok := Tokens{Input: 1_000_000, Cached: 400_000, Output: 100_000}
	if got, want := cfg.Cost("openai/gpt-4o-mini", tok), 0.6*0.15+0.4*0.075+0.1*0.6; abs(got-want) > 1e-9 {
		t.Fatalf("cost = %v, want %v", got, want)
	}
	if got := cfg.Cost("anthropic/unpriced", tok); got != 0 {
		t.Fatalf("unpriced model cost %v", got)
	}
	loc := time.FixedZone("owner", 2*3600)
	st := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC) // 01:30 on the 2nd in the owner's zone
	for _, c := range []Call{
		{At: now.Add(-2 * time.Hour), Origin: "sentinel", Model: "openai/gpt-4o-mini", Tokens: Tokens{Input: 700, Output: 100}}, // the 1st, owner time
		{At: now.Add(-time.Hour), Origin: "sentinel", Model: "openai/gpt-4o-mini", Tokens: Tokens{Input: 900, Output: 150}},
		{At: now, Origin: "user", Model: "openai/gpt-4o-mini", Tokens: Tokens{Input: 5, Output: 1}},
	} {
		if _, err := st.Record(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	sts, err := st.CapStatuses(ctx, cfg, now, loc)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		scope, period, unit string
		used                float64
		reached, enforced   bool
	}{
		{"sentinel", PeriodDay, UnitTokens, 1050, true, true},
		{"sentinel", PeriodMonth, UnitUSD, cfg.Cost("openai/gpt-4o-mini", Tokens{Input: 1600, Output: 250}), false, true},
		{ScopeTotal, PeriodDay, UnitTokens, 1056, true, true},
	}
	if len(sts) != len(want) {
		t.Fatalf("statuses %+v", sts)
	}
	for i, w := range want {
		s := sts[i]
		if s.Scope != w.scope || s.Period != w.period || s.Unit != w.unit || abs(s.Used-w.used) > 1e-9 || s.Reached != w.reached || s.Enforced != w.enforced {
			t.Errorf("status %d = %+v, want %+v", i, s, w)
		}
	}
	if got := sts[0].ResumeAt; !got.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, loc)) {
		t.Errorf("resume at %v, want the owner's next midnight", got)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// A requested origin is never gated (fails open), whatever the caps; an
// ambient one is refused once its cap is reached, with one OnPause.
func TestMeterGates(t *testing.T) {
	st := openStore(t)
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	var pauses []Pause
	m, err := NewMeter(MeterOptions{Store: st, Clock: clk, Location: time.UTC,
		Config:  Config{Caps: map[string]Cap{"heartbeat": {DailyTokens: 10}, "user": {DailyTokens: 1}}},
		OnPause: func(_ context.Context, p Pause) { pauses = append(pauses, p) }})
	if err != nil {
		t.Fatal(err)
	}
	inner := &fixed{u: llm.Usage{InputTokens: 20, OutputTokens: 5}}
	p := m.Wrap(inner)
	call := func(origin string) error {
		_, err := p.Chat(llm.WithCallTag(context.Background(), llm.CallTag{Origin: origin}), llm.Request{})
		return err
	}
	for i := 0; i < 3; i++ {
		if err := call("user"); err != nil {
			t.Fatalf("user call refused: %v", err)
		}
	}
	if err := call("heartbeat"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := call("heartbeat"); !errors.Is(err, ErrPaused) {
			t.Fatalf("heartbeat over its cap: %v", err)
		}
	}
	if err := call("sentinel"); err != nil {
		t.Fatalf("a cap on heartbeat paused the sentinel: %v", err)
	}
	if inner.calls != 5 || len(pauses) != 1 || pauses[0].Scope != "heartbeat" {
		t.Fatalf("calls %d, pauses %+v", inner.calls, pauses)
	}
	clk.Set(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	if err := call("heartbeat"); err != nil {
		t.Fatalf("not resumed the next day: %v", err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", now.Add(-7 * 24 * time.Hour), false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"2026-12-01", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},
		{"2026-12-01T08:00:00Z", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
		{"-3d", time.Time{}, true},
		{"99999d", time.Time{}, true},
	}
	for _, c := range cases {
		got, err := ParseSince(c.in, now, time.UTC)
		if (err != nil) != c.err || (!c.err && !got.Equal(c.want)) {
			t.Errorf("ParseSince(%q) = %v, %v", c.in, got, err)
		}
		if c.err && !errors.Is(err, ErrBadSince) {
			t.Errorf("ParseSince(%q) error %v is not ErrBadSince", c.in, err)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", DefaultConfig(), true},
		{"ambient cap", Config{Caps: map[string]Cap{ScopeAmbient: {DailyTokens: 5}}}, true},
		{"unknown scope", Config{Caps: map[string]Cap{"bots": {DailyTokens: 5}}}, false},
		{"negative cap", Config{Caps: map[string]Cap{"user": {DailyUSD: -1}}}, false},
		{"negative price", Config{Prices: map[string]Price{"m": {Output: -1}}}, false},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// BenchmarkRecord is the cost every model call pays: one prepared insert.
func BenchmarkRecord(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	c := Call{At: time.Now(), Origin: "user", Model: "openai/gpt-4o-mini", Provider: "openai", Conversation: "cli:local",
		Tokens: Tokens{Input: 1200, Output: 80, Cached: 1024}, Duration: 900 * time.Millisecond, OK: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Record(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGate is what an ambient call pays with caps set: the period's
// spend read over a month of calls (about 4,000 rows).
func BenchmarkGate(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	now := time.Date(2026, 12, 28, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 4000; i++ {
		origin := AmbientOrigins[i%len(AmbientOrigins)]
		if _, err := st.Record(ctx, Call{At: now.Add(-time.Duration(i) * 10 * time.Minute), Origin: origin, Model: "openai/gpt-4o-mini",
			Tokens: Tokens{Input: 1000, Output: 50}}); err != nil {
			b.Fatal(err)
		}
	}
	m, err := NewMeter(MeterOptions{Store: st, Clock: clock.NewFake(now), Location: time.UTC,
		Config: Config{Caps: map[string]Cap{ScopeAmbient: {MonthlyTokens: 1 << 40}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Gate(ctx, "sentinel"); err != nil {
			b.Fatal(err)
		}
	}
}
