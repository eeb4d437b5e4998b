package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `raven simulate` as a user runs it: flags reach the run, --json is one
// report object, a bad scenario or --compare file is a usage error.
func TestSimulateCommand(t *testing.T) {
	weekend := filepath.Join("..", "..", "examples", "scenarios", "weekend.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("planner: {kind: oracle}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "text", args: []string{"simulate", weekend, "--days", "1", "--tmp-dir", t.TempDir()}, want: "days / seed                1 from 2026-03-07 / 13"},
		{name: "json and seed", args: []string{"simulate", weekend, "--days", "1", "--seed", "4", "--json", "--tmp-dir", t.TempDir()}, want: `"seed":4`},
		{name: "bad scenario", args: []string{"simulate", bad}, wantErr: `planner.kind "oracle"`},
		{name: "missing compare file", args: []string{"simulate", weekend, "--compare", filepath.Join(t.TempDir(), "nope.json")}, wantErr: "--compare"},
		{name: "no scenario", args: []string{"simulate"}, wantErr: "want 1 argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runRaven(t, "", tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if exitCode(err) != 2 {
					t.Fatalf("exit code %d, want 2 (usage)", exitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(strings.Join(tc.args, " "), "--json") && !json.Valid([]byte(out)) {
				t.Fatalf("--json printed no JSON object:\n%s", out)
			}
		})
	}
}
