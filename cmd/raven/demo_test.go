package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// `raven demo` as a user runs it: --section and --json reach the demo, the
// pick section proves its pick never reached a model, and a wrong section
// name is a usage error naming the real ones.
func TestDemoCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "discovery as JSON", args: []string{"demo", "--section", "discovery", "--json", "--tmp-dir", t.TempDir()}, want: `"kind":"discovery.pick"`},
		{name: "policy as text", args: []string{"demo", "--section", "policy", "--tmp-dir", t.TempDir()}, want: "DENIED by policy layer preferences"},
		{name: "unknown section", args: []string{"demo", "--section", "nope", "--tmp-dir", t.TempDir()}, wantErr: "want one of foundation, sentinel, discovery, policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runRaven(t, "", tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, out)
			}
			if !strings.Contains(strings.Join(tc.args, " "), "--json") {
				return
			}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var ev struct {
					Kind string         `json:"kind"`
					Data map[string]any `json:"data"`
				}
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if ev.Kind == "discovery.pick" && (ev.Data["agent_calls"] != 0.0 || ev.Data["planner_calls"] != 0.0) {
					t.Fatalf("the pick reached a model: %v", ev.Data)
				}
			}
		})
	}
}
