package e2e

import (
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

func TestChatOneShotAnswersWithTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	r := e.MustRun("chat", "-m", "hi")
	if strings.TrimSpace(r.Stdout) != "fake reply to: hi" {
		t.Fatalf("chat -m printed the wrong reply:\n%s", r)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model saw %d requests, want 1\n%s", len(reqs), e.Model)
	}
	req := reqs[0]
	if req.Model != fakeopenai.DefaultModel || req.LastUser() != "hi" || !strings.Contains(req.System(), "You are Raven") {
		t.Fatalf("request = model %q, last user %q, system:\n%s", req.Model, req.LastUser(), req.System())
	}
	for _, tool := range []string{"read_file", "write_file", "ask_user"} {
		if !req.HasTool(tool) {
			t.Errorf("one-shot chat did not offer %s: %v", tool, req.ToolNames())
		}
	}
}

func TestChatOneShotRunsAToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.Model.Enqueue(
		fakeopenai.Call("read_file", map[string]string{"path": "MEMORY.md"}),
		fakeopenai.Text("Your memory file is there."),
	)
	r := e.MustRun("chat", "-m", "what do you remember?")
	if !strings.Contains(r.Stdout, "Your memory file is there.") {
		t.Fatalf("reply:\n%s", r)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want a tool round trip (2 requests)\n%s", e.Model)
	}
	call := reqs[1].Messages[len(reqs[1].Messages)-2]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != "read_file" {
		t.Fatalf("second request lacks the assistant's tool call: %+v", reqs[1].Messages)
	}
	res, ok := reqs[1].ToolResult(call.ToolCalls[0].ID)
	if !ok || res.Content == "" || strings.Contains(strings.ToLower(res.Content), "error") {
		t.Fatalf("tool result sent back to the model = %+v, %v", res, ok)
	}
}

func TestConfigGetSet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	cases := []struct {
		name     string
		args     []string
		code     int
		stdout   string // exact, after trimming
		inStderr string
	}{
		{"default", []string{"config", "get", "heartbeat.enabled"}, 0, "true", ""},
		{"set", []string{"config", "set", "heartbeat.enabled", "false"}, 0, "heartbeat.enabled = false", ""},
		{"get after set", []string{"config", "get", "heartbeat.enabled"}, 0, "false", ""},
		{"set duration", []string{"config", "set", "heartbeat.interval", "45m"}, 0, "heartbeat.interval = 45m", ""},
		{"get duration", []string{"config", "get", "heartbeat.interval"}, 0, "45m0s", ""},
		{"unknown key", []string{"config", "get", "nope.key"}, 2, "", "nope.key"},
		{"bad value", []string{"config", "set", "heartbeat.enabled", "maybe"}, 2, "", "heartbeat.enabled"},
		{"bad value kept nothing", []string{"config", "get", "heartbeat.enabled"}, 0, "false", ""},
	}
	for _, c := range cases {
		r := e.Run(c.args...)
		if r.Code != c.code || (c.code == 0 && strings.TrimSpace(r.Stdout) != c.stdout) || !strings.Contains(r.Stderr, c.inStderr) {
			t.Errorf("%s: want exit %d stdout %q stderr containing %q, got\n%s", c.name, c.code, c.stdout, c.inStderr, r)
		}
	}
}

func TestCronAddDeliverIsListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	add := e.MustRun("cron", "add", "--name", "standup", "--message", "Stand-up in 5 minutes", "--every", "1h", "--deliver")
	id := strings.TrimSpace(add.Stdout)
	if id == "" {
		t.Fatalf("cron add printed no id:\n%s", add)
	}
	var jobs []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Message  string `json:"message"`
		Deliver  bool   `json:"deliver"`
		Enabled  bool   `json:"enabled"`
		Schedule struct {
			Kind  string `json:"kind"`
			Every string `json:"every"`
		} `json:"schedule"`
	}
	e.MustRun("cron", "list", "--json").JSON(t, &jobs)
	if len(jobs) != 1 {
		t.Fatalf("jobs = %+v", jobs)
	}
	j := jobs[0]
	if j.ID != id || j.Name != "standup" || j.Message != "Stand-up in 5 minutes" || !j.Deliver || !j.Enabled || j.Schedule.Kind != "every" || j.Schedule.Every != "1h" {
		t.Fatalf("listed job = %+v", j)
	}
	if r := e.Run("cron", "add", "--name", "x", "--message", "y", "--every", "10ms"); r.Code != 2 || !strings.Contains(r.Stderr, "every") {
		t.Fatalf("sub-second --every accepted:\n%s", r)
	}
}
