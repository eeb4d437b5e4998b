package runtime

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

// writeLog records every write separately, to check what a terminal
// showed and in which order.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// With the default config, a user turn on the terminal streams through the
// assembled runtime: the preamble word by word, a line for the tool call,
// the reply word by word, and the reply's Deliver only ends the line. A
// proactive (cron) turn on the same conversation does not stream.
func TestREPLStreamsInOrder(t *testing.T) {
	a, _ := newSentinelApp(t, false, []llm.Turn{
		{Content: "Let me look.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Content: "Nothing here yet."},
		{Content: "Reminder: stretch."},
	})
	if !a.Config().Agent.Stream {
		t.Fatal("agent.stream is off by default")
	}
	term := &writeLog{}
	detach, err := a.AttachOwner(context.Background(), CLIConversation, channels.NewStreamingCLI(term, channels.CLIStream{}))
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	submit := func(o spine.Origin, content string) string {
		tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: o, Channel: CLIChannel, ChatID: CLIChatID, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tk.Wait(context.Background())
		if err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		return res.Reply
	}
	if r := submit(spine.OriginUser, "what's in my workspace?"); r != "Nothing here yet." {
		t.Fatalf("reply = %q", r)
	}
	want := []string{"Let ", "me ", "look.", "\n", "· list_dir {\"path\":\".\"}\n", "Nothing ", "here ", "yet.", "\n"}
	if got := term.all(); !reflect.DeepEqual(got, want) {
		t.Fatalf("terminal writes:\n%q\nwant\n%q", got, want)
	}
	submit(spine.OriginCron, "stretch reminder")
	if got := term.all()[len(want):]; len(got) != 1 {
		t.Fatalf("a cron turn streamed: %q", got)
	}
}
