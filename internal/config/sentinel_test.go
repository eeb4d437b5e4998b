package config

import (
	"errors"
	"os"
	"path/filepath"
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
