package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

func askUser(question string) fakeopenai.Reply {
	return fakeopenai.Call("ask_user", map[string]any{"questions": []map[string]any{{"question": question}}})
}

// §3: `raven chat -m` whose turn calls ask_user prints the question, reads
// the answer from stdin and prints the final reply; the answer reaches the
// model as the tool result.
func TestChatOneShotAskUserAnsweredFromStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.Model.Enqueue(askUser("Which day suits you for the dentist?"))
	e.Model.On(fakeopenai.AfterToolResult(), func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Text("Booked for " + r.Last().Content)
	})
	r := e.RunStdin("thursday\n", "chat", "-m", "book the dentist")
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "Which day suits you for the dentist?") || !strings.Contains(r.Stdout, "Booked for") {
		t.Fatalf("chat -m with ask_user:\n%s\n%s", r, e.Model)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Last().Content, "thursday") {
		t.Fatalf("the answer did not reach the model:\n%s", e.Model)
	}
}

// §3: with stdin at end of input (</dev/null, a cron script) the question
// cannot be answered: the command fails at once with a message that says
// why, not after ask_user's 10-minute timeout.
func TestChatOneShotAskUserNoTerminalFailsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.Model.Enqueue(askUser("Which day suits you?"))
	start := time.Now()
	r := e.Run("chat", "-m", "book the dentist")
	took := time.Since(start)
	if r.Code == 0 || !strings.Contains(r.Stderr, "stdin is not a terminal") || took >= 5*time.Second {
		t.Fatalf("chat -m with ask_user and no stdin (took %s):\n%s", took, r)
	}
}

// §3: one-shot chat offers the cron tool, and a reminder the model sets
// with it is a job `cron list` shows, delivering back to the terminal.
func TestChatOneShotOffersCron(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.Model.Enqueue(fakeopenai.Call("cron", map[string]any{"action": "add", "name": "standup", "message": "Stand-up in 5", "every": "24h", "deliver": true}))
	e.MustRun("chat", "-m", "remind me of the stand-up every day")
	reqs := e.Model.Requests()
	if len(reqs) != 2 || !reqs[0].HasTool("cron") {
		t.Fatalf("one-shot chat did not offer or run cron:\n%s", e.Model)
	}
	var jobs []struct {
		Name    string `json:"name"`
		Deliver bool   `json:"deliver"`
	}
	e.MustRun("cron", "list", "--json").JSON(t, &jobs)
	if len(jobs) != 1 || jobs[0].Name != "standup" || !jobs[0].Deliver {
		t.Fatalf("jobs after the cron tool call: %+v\n%s", jobs, e.Model)
	}
}
