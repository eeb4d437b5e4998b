package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// writeModel writes a scripted model (internal/llm/scripted.go) and returns
// its --model spec.
func writeModel(t *testing.T, dir, name string, turns ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + p
}

func toolCall(name string, args map[string]any) map[string]any {
	return map[string]any{"tool_calls": []map[string]any{{"name": name, "arguments": args}}}
}

func reply(text string) map[string]any { return map[string]any{"content": text} }

// `raven chat -m` whose turn calls ask_user prints the question and takes
// the answer from stdin; with nothing on stdin it fails at once with a
// clear message instead of waiting out the 10-minute budget.
func TestChatOneShotAskUser(t *testing.T) {
	ask := toolCall("ask_user", map[string]any{"questions": []map[string]any{{
		"question": "Monday or Tuesday?", "choices": []string{"Monday", "Tuesday"}}}})
	cases := []struct {
		name      string
		stdin     string
		wantErr   error
		wantOut   []string
		modelRead string // in the tool result the model read
	}{
		{name: "answered on stdin", stdin: "2\n", wantOut: []string{"Monday or Tuesday?", "Booked Tuesday."}, modelRead: "Owner chose: Tuesday"},
		{name: "answered by label", stdin: "Monday\n", wantOut: []string{"Monday or Tuesday?", "Booked Tuesday."}, modelRead: "Owner chose: Monday"},
		{name: "no terminal, no data", stdin: "", wantErr: errNoTerminalAnswer, wantOut: []string{"Monday or Tuesday?"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			model := writeModel(t, dir, "m.json", ask, reply("Booked Tuesday."))
			start := time.Now()
			out, err := runRaven(t, tc.stdin, "--data-dir", dir, "--model", model, "chat", "-m", "book the boiler")
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("chat -m took %s", d)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v\n%s", err, tc.wantErr, out)
				}
			} else if err != nil {
				t.Fatalf("chat -m: %v\n%s", err, out)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.modelRead == "" {
				return
			}
			db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st, err := session.Open(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := st.Recent(t.Context(), "cli:direct", 20)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range msgs {
				found = found || (m.Role == llm.RoleTool && strings.Contains(m.Content, tc.modelRead))
			}
			if !found {
				t.Fatalf("the model never read %q: %+v", tc.modelRead, msgs)
			}
		})
	}
}

// One-shot chat has the cron tool: a turn can schedule a job.
func TestChatOneShotHasCronTool(t *testing.T) {
	dir := t.TempDir()
	model := writeModel(t, dir, "m.json",
		toolCall("cron", map[string]any{"action": "add", "name": "water", "message": "drink water", "every": "1h", "deliver": true}),
		reply("Scheduled."))
	out, err := runRaven(t, "", "--data-dir", dir, "--model", model, "chat", "-m", "remind me to drink water hourly")
	if err != nil || !strings.Contains(out, "Scheduled.") {
		t.Fatalf("chat -m: %v\n%s", err, out)
	}
	jobs, err := cron.NewStore(filepath.Join(dir, "cron", "jobs.json"), nil, nil, time.Second).Jobs(t.Context())
	if err != nil || len(jobs) != 1 || jobs[0].Name != "water" {
		t.Fatalf("jobs = %+v (%v)", jobs, err)
	}
}

// `raven cron serve` refuses to start beside a running gateway (which runs
// every job with its model) and says so; without one it serves.
func TestCronServeRefusesBesideGateway(t *testing.T) {
	dir := t.TempDir()
	gw := startGatewayChild(t, dir)
	gw.dial(t).Close()
	start := time.Now()
	_, errOut, err := runRavenIO(t, "", "--data-dir", dir, "cron", "serve")
	if !errors.Is(err, errGatewayRunsCron) || !strings.Contains(err.Error(), "a gateway (pid ") {
		t.Fatalf("cron serve beside a gateway: %v\n%s", err, errOut)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusal took %s", d)
	}
	help, _ := runRaven(t, "", "cron", "serve", "--help")
	if !strings.Contains(help, "refuses to start") || !strings.Contains(help, "while a gateway runs") {
		t.Fatalf("--help does not say it refuses beside a gateway:\n%s", help)
	}
	gw.stop(t)
}

// `raven gateway status` shows the values in effect in the running gateway.
func TestGatewayStatusShowsEffectiveValues(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"channels":{"forward":["telegram:42"]},"heartbeat":{"enabled":true,"interval":"45m"},"sentinel":{"enabled":true}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGatewayChild(t, dir)
	gw.dial(t).Close()
	out, err := runRaven(t, "", "--data-dir", dir, "gateway", "status")
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"gateway: running", "model:      none", "forward [telegram:42]", "sentinel:   on every", "heartbeat:  on every 45m0s", "cron:       on", "outbox:     0 waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	gw.stop(t)
}

// A standalone `raven chat` shows, at start, what waited in the outbox
// while no surface was attached, and marks it delivered.
func TestChatStartShowsOutbox(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.Open(t.Context(), db, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Put(t.Context(), outbox.Item{Origin: outbox.OriginCron, Content: "Stand up and stretch."}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd := exec.Command(os.Args[0], "--data-dir", dir, "chat")
	cmd.Env = append(os.Environ(), childEnv+"=1", "RAVEN_MODEL=")
	cmd.Stdin = strings.NewReader("") // Ctrl-D at once
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("raven chat: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), channels.ProactiveMarker+"Stand up and stretch.") {
		t.Fatalf("outbox item not shown at chat start:\n%s", out)
	}
	inbox, err := runRaven(t, "", "--data-dir", dir, "inbox", "--json")
	if err != nil || strings.Contains(inbox, "Stand up") {
		t.Fatalf("still in the inbox after the chat showed it: %s (%v)", inbox, err)
	}
}

// `raven chat -m` with no model prints how to set one and fails.
func TestChatOneShotWithoutModelFails(t *testing.T) {
	t.Setenv("RAVEN_MODEL", "")
	out, err := runRaven(t, "", "--data-dir", t.TempDir(), "chat", "-m", "hi")
	if !errors.Is(err, errChatNoModel) || exitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d)", err, exitCode(err))
	}
	if !strings.Contains(out, "raven config set model") {
		t.Fatalf("no hint printed:\n%s", out)
	}
}
