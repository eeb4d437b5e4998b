package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// The interactive REPL with piped stdin: two turns, then end of input.
// The second request carries the first exchange (the session persists).
func TestChatREPLTwoTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.Model.On(fakeopenai.LastUserContains("capital"), fakeopenai.Always(fakeopenai.Text("Paris.")))
	p := e.Start("chat")
	p.Send("my name is Ada")
	p.WaitStdout(10*time.Second, "fake reply to: my name is Ada")
	p.Send("what is the capital of France?")
	p.WaitStdout(10*time.Second, "Paris.")
	p.CloseStdin()
	if r := p.Wait(10 * time.Second); r.Code != 0 {
		t.Fatalf("REPL exit at end of input:\n%s", r)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%s", e.Model)
	}
	var history []string
	for _, m := range reqs[1].Messages {
		history = append(history, m.Role+":"+m.Content)
	}
	joined := strings.Join(history, "\n")
	if !strings.Contains(joined, "user:my name is Ada") || !strings.Contains(joined, "assistant:fake reply to: my name is Ada") {
		t.Fatalf("second turn did not carry the first:\n%s", joined)
	}
}
