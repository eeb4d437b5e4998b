package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The whole demo must run, fast, and show each path's key line: a broken
// path fails the run or drops its line.
func TestDemoShowsEveryPath(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	events, err := Run(context.Background(), &buf, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, buf.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("demo took %s; it must stay well under 30s", d)
	}
	out := buf.String()
	flat := norm(out)
	for _, want := range []struct{ section, text string }{
		{"foundation", "calls write_file"},
		{"foundation", "write_file → wrote"},
		{"foundation", "merged into the running turn"},
		{"foundation", "merged into turn 1, ran no turn of its own"},
		{"foundation", "Side-gate code for him: 4471"},
		{"foundation", "background subagent sa-"},
		{"sentinel", "planner → nudge: policy ok → delivered as nudge n-"},
		{"sentinel", "⚑ raven         → cli:direct “Morning! The plumber"},
		{"sentinel", "planner → nudge_inject: queued"},
		{"sentinel", "good running weather. By the way: the passport office"},
		{"sentinel", "planner → nudge_defer: queued"},
		{"sentinel", "keep waiting"},
		{"sentinel", "thread settled → dispatching deferred nudge n-"},
		{"sentinel", "planner → spawn_agent"},
		{"sentinel", "Friday trains to Leeds"},
		{"sentinel", "DENIED by policy layer quiet_hours"},
		{"sentinel", "multiplier 1.00 → 0.75"},
		{"cron", `fired "stretch" → delivered`},
		{"cron", "⚑ raven → telegram:owner-phone “Reminder for everyone: the bins"},
		{"cron", `job "water" disabled: auto-decay: 3 fires`},
		{"cron", "requests coalesced into one heartbeat run"},
		{"cron", "no model call"},
	} {
		if !strings.Contains(flat, norm(want.text)) {
			t.Errorf("section %s: output lacks %q", want.section, want.text)
		}
	}
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Section+"/"+e.Kind]++
	}
	for _, k := range []string{
		"foundation/spine.inject_result", "foundation/turn.inject_merged", "foundation/subagent.spawned",
		"sentinel/sentinel.injected", "sentinel/sentinel.defer_dispatch", "sentinel/policy.multiplier",
		"cron/cron.decayed", "cron/wake.fired", "cron/heartbeat.tick",
	} {
		if kinds[k] == 0 {
			t.Errorf("no %s event", k)
		}
	}
	if kinds["sentinel/sentinel.feedback"] != 5 {
		t.Errorf("feedback events = %d, want 5", kinds["sentinel/sentinel.feedback"])
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestDemoJSONAndSection(t *testing.T) {
	var buf bytes.Buffer
	events, err := Run(context.Background(), &buf, Options{JSON: true, Section: "foundation", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(events) || len(lines) == 0 {
		t.Fatalf("%d lines for %d events", len(lines), len(events))
	}
	for _, l := range lines {
		var e Event
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if e.Section != "foundation" || e.At.IsZero() || e.Kind == "" {
			t.Errorf("bad event %+v", e)
		}
	}
}

func TestDemoRemovesItsDataUnlessKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := Run(context.Background(), &bytes.Buffer{}, Options{Section: "foundation", Dir: dir, Keep: keep}); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		if got := len(ents) == 1; got != keep {
			t.Errorf("keep=%v: %d entries left in %s", keep, len(ents), dir)
		}
	}
}

func TestUnknownSection(t *testing.T) {
	_, err := Run(context.Background(), &bytes.Buffer{}, Options{Section: "nope", Dir: t.TempDir()})
	if !errors.Is(err, ErrUnknownSection) {
		t.Fatalf("err = %v, want ErrUnknownSection", err)
	}
}

// norm collapses the timeline's wrapping and column padding.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }
