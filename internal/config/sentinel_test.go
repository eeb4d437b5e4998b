package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestSentinelBehaviorsAndRoutines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b, r := cfg.Sentinel.Behaviors, cfg.Sentinel.Routines
	if b.Enabled || b.Idle.D() != 30*time.Minute || b.Interval.D() != 6*time.Hour || b.MaxMessages != 200 {
		t.Fatalf("behaviors defaults = %+v (the extractor must default off)", b)
	}
	if !r.Enabled || r.TailBytes != 256<<10 || r.MinWeeks != 3 || r.MinDays != 5 || r.Max != 5 {
		t.Fatalf("routines defaults = %+v", r)
	}
	if err := Set(p, "sentinel.behaviors.enabled", "true"); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, "sentinel.behaviors.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	if cfg, err = Load(p); err != nil || !cfg.Sentinel.Behaviors.Enabled || cfg.Sentinel.Behaviors.Idle.D() != time.Hour || cfg.Sentinel.Behaviors.Interval.D() != 6*time.Hour {
		t.Fatalf("after set: %+v %v", cfg.Sentinel.Behaviors, err)
	}
	for body, key := range map[string]string{
		`{"sentinel": {"behaviors": {"interval": "1s"}}}`:  "sentinel.behaviors.interval",
		`{"sentinel": {"behaviors": {"idle": "0s"}}}`:      "sentinel.behaviors.idle",
		`{"sentinel": {"behaviors": {"max_messages": 0}}}`: "sentinel.behaviors.max_messages",
		`{"sentinel": {"routines": {"min_weeks": 1}}}`:     "sentinel.routines.min_weeks",
		`{"sentinel": {"routines": {"max": 100}}}`:         "sentinel.routines.max",
		`{"sentinel": {"routines": {"tail_bytes": -1}}}`:   "sentinel.routines.tail_bytes",
		`{"sentinel": {"routines": {"min_days": 1}}}`:      "sentinel.routines.min_days",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s: err = %v, want key %s", body, err, key)
		}
	}
}

func TestPlannerModel(t *testing.T) {
	tests := []struct{ model, planner, want string }{
		{"", "", ""},
		{"openai/gpt-4o-mini", "", "openai/gpt-4o-mini"},
		{"openai/gpt-4o-mini", "ollama/qwen2.5:7b", "ollama/qwen2.5:7b"},
		{"", "ollama/qwen2.5:7b", "ollama/qwen2.5:7b"},
	}
	for _, tt := range tests {
		c := Default()
		c.Model, c.Sentinel.PlannerModel = tt.model, tt.planner
		if got := c.PlannerModel(); got != tt.want {
			t.Errorf("%+v: %q", tt, got)
		}
	}
}

// SentinelPaths hands the Sentinel the data directory's own files, so a
// CLI reading config.Paths and the gateway's Sentinel agree on every file.
func TestSentinelPathsFollowLayout(t *testing.T) {
	p, err := NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp := p.SentinelPaths()
	for _, c := range []struct{ got, want string }{
		{sp.State, p.SentinelState()}, {sp.Feedback, p.Feedback()}, {sp.Preferences, p.Preferences()},
		{sp.PendingDecisions, p.PendingDecisions()}, {sp.TickLog, p.TickLog()}, {sp.Memory, p.Memory()},
		{sp.History, p.History()}, {sp.Attention, p.Attention()}, {sp.Behaviors, p.Behaviors()},
	} {
		if c.got != c.want {
			t.Errorf("sentinel path %q, want %q", c.got, c.want)
		}
	}
	// A field added to sentinel.Paths and left unfilled here fails too.
	v := reflect.ValueOf(sp)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).String() == "" {
			t.Errorf("sentinel.Paths.%s is not filled", v.Type().Field(i).Name)
		}
	}
}
