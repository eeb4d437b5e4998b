package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
)

// The CLI drives one tick with a scripted planner, lists the nudge, records
// a verdict through the same function the tool uses, and rejects bad input
// with exit code 2.
func TestSentinelAndNudgesCLI(t *testing.T) {
	dir := t.TempDir()
	planner := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"turns":[{"tool_calls":[{"name":"planner_decision","arguments":
		{"action":"nudge","reason":"deadline","priority":"medium","proactivity_score":0.8,"nudge_message":"The tax return is due Friday.","target_session":"`+target+`"}}]}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// No quiet hours, so the test passes at any time of day.
	// The daily discovery run is off: after its hour it would take the
	// planner's one scripted turn.
	cfg := `{"sentinel":{"discovery":false,"policy":{"quiet_hours":{"start":"00:00","end":"00:00"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// A Telegram nudge: this process has no Telegram outlet, so the one
	// target resolver sends it to the surface that can take it — this
	// terminal, attached as cli:direct — printed with the proactive marker
	// and charged once, where it was shown.
	// With --json stdout is the record alone (pipeable to jq); the
	// terminal's copy of the nudge goes to stderr.
	out, errOut, err := runRavenIO(t, "", "--data-dir", dir, "--model", "scripted:"+planner("tg.json", "telegram:42"), "sentinel", "tick", "--json")
	if err != nil {
		t.Fatal(err, out, errOut)
	}
	if strings.Contains(out+errOut, "→ [telegram:42]") {
		t.Fatalf("phantom telegram delivery printed:\n%s%s", out, errOut)
	}
	if !strings.Contains(errOut, channels.ProactiveMarker+"The tax return is due Friday.") {
		t.Fatalf("nudge not printed on stderr: %s", errOut)
	}
	var rec sentinel.TickRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil || !rec.Delivered || rec.NudgeID == "" {
		t.Fatalf("tick = %s (%v)", out, err)
	}

	out, err = runRaven(t, "", "--data-dir", dir, "nudges", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var ns []feedback.NudgeSummary
	if err := json.Unmarshal([]byte(out), &ns); err != nil || len(ns) != 1 || ns[0].NudgeID != rec.NudgeID || ns[0].Verdict != "" || ns[0].Session != "cli:direct" {
		t.Fatalf("nudges = %s (%v)", out, err)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown id", []string{"nudges", "feedback", "n-nope", "accepted"}, "unknown nudge ID"},
		{"bad verdict", []string{"nudges", "feedback", rec.NudgeID, "meh"}, "want accepted"},
		{"missing args", []string{"nudges", "feedback", rec.NudgeID}, "want 2 argument"},
		{"bad --last", []string{"sentinel", "explain", "--last", "0"}, "--last"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runRaven(t, "", append([]string{"--data-dir", dir}, tc.args...)...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v", err)
			}
		})
	}

	out, err = runRaven(t, "", "--data-dir", dir, "nudges", "feedback", rec.NudgeID, "dismissed", "--reason", "not now")
	if err != nil || !strings.Contains(out, "recorded dismissed") {
		t.Fatal(err, out)
	}
	out, _ = runRaven(t, "", "--data-dir", dir, "nudges")
	if !strings.Contains(out, rec.NudgeID) || !strings.Contains(out, "dismissed") || !strings.Contains(out, "tax return") {
		t.Fatalf("nudges text = %s", out)
	}
	// The verdict reached the shared policy state.
	out, err = runRaven(t, "", "--data-dir", dir, "sentinel", "status")
	if err != nil || !strings.Contains(out, "cooldown:") || !strings.Contains(out, "nudge") {
		t.Fatalf("status = %s (%v)", out, err)
	}
	out, err = runRaven(t, "", "--data-dir", dir, "sentinel", "explain", "--last", "5")
	if err != nil || !strings.Contains(out, "The tax return is due Friday.") || !strings.Contains(out, "delivered: yes") {
		t.Fatalf("explain = %s (%v)", out, err)
	}
}

// With no model configured the tick degrades to a recorded skip.
func TestSentinelTickWithoutModel(t *testing.T) {
	dir := t.TempDir()
	out, err := runRaven(t, "", "--data-dir", dir, "sentinel", "tick", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var rec sentinel.TickRecord
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rec); err != nil {
		t.Fatal(err, out)
	}
	if rec.Action != sentinel.ActionSkip || rec.Delivered {
		t.Fatalf("%+v", rec)
	}
}
