package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// `raven sentinel prefs` shows the file and the effective policy; set is
// strict and tighten-only (exit 2 with the reason); unset removes a key;
// a malformed file is reported and left alone; what set wrote is what the
// policy reads.
func TestSentinelPrefsCLI(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		return runRaven(t, "", append([]string{"--data-dir", dir, "sentinel", "prefs"}, args...)...)
	}
	out, err := run()
	if err != nil || !strings.Contains(out, "not written yet") || !strings.Contains(out, "day_quota") {
		t.Fatalf("empty view: %v\n%s", err, out)
	}
	for _, kv := range [][2]string{{"quiet_hours", "22:00-07:00"}, {"day_quota", "3"}, {"muted_topics", "crypto-prices"}} {
		if out, err := run("set", kv[0], kv[1]); err != nil {
			t.Fatalf("set %v: %v %s", kv, err, out)
		}
	}
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"set", "day_quota", "9"}, "can only tighten"},
		{[]string{"set", "session_cooldown", "1m"}, "shorter than the configured 20m0s"},
		{[]string{"set", "loudness", "11"}, "unknown preference"},
		{[]string{"set", "quiet_hours", "late"}, "HH:MM-HH:MM"},
		{[]string{"unset", "loudness"}, "unknown preference"},
	}
	for _, r := range refused {
		_, err := run(r.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), r.want) {
			t.Fatalf("%v: %v, want exit 2 with %q", r.args, err, r.want)
		}
	}
	out, err = run("--json")
	if err != nil {
		t.Fatal(err)
	}
	var v prefsView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err, out)
	}
	eff := map[string]policy.PreferenceRow{}
	for _, r := range v.Effective {
		eff[r.Key] = r
	}
	if !v.Exists || eff["day_quota"].Effective != "3" || eff["day_quota"].Configured != "6" ||
		eff["quiet_hours"].Effective != "23:00-07:00 + 22:00-07:00" || eff["muted_topics"].Preference != "crypto-prices" {
		t.Fatalf("view %+v", v)
	}
	if r := policy.NewPreferencesReader(v.Path, nil).Overrides(); r.DayQuota == nil || *r.DayQuota != 3 || r.QuietHours == nil {
		t.Fatalf("policy reads %+v", r)
	}
	if out, err := run("unset", "day_quota"); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("unset: %v %s", err, out)
	}
	if out, _ := run("unset", "day_quota"); !strings.Contains(out, "was not set") {
		t.Fatalf("second unset: %s", out)
	}
	path := filepath.Join(dir, "sentinel", "preferences.json")
	if err := os.WriteFile(path, []byte(`{"day_quota": "two"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("set", "day_quota", "1"); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("corrupt file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"day_quota": "two"}` {
		t.Fatalf("corrupt file rewritten: %s", b)
	}
}
