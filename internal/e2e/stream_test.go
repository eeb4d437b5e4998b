package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels/telegramtest"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// §4: `raven chat -m` streams: with the model holding the rest of its
// reply after the first words, those words are already on stdout while the
// command still runs; once released the whole reply is there, once, with
// a line for the tool call the model made first.
func TestChatOneShotStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	hold := make(chan struct{})
	e.Model.Enqueue(fakeopenai.Reply{Text: "Let me look. ", ToolCalls: []fakeopenai.ToolCall{{Name: "list_dir", Arguments: `{"path":"."}`}}},
		fakeopenai.Reply{Text: "Your workspace is empty, nothing to tidy.", Hold: hold})
	p := e.Start("chat", "-m", "tidy my workspace")
	p.WaitStdout(20*time.Second, "Your ")
	select {
	case <-p.Exited():
		t.Fatalf("chat -m exited before the reply was complete:\n%s", p.Stdout())
	default:
	}
	if got := p.Stdout(); strings.Contains(got, "nothing to tidy") || !strings.Contains(got, "Let me look. \n· list_dir {\"path\":\".\"}\n") {
		t.Fatalf("partial output = %q", got)
	}
	close(hold)
	r := p.Wait(20 * time.Second)
	want := "Let me look. \n· list_dir {\"path\":\".\"}\nYour workspace is empty, nothing to tidy.\n"
	if r.Code != 0 || r.Stdout != want {
		t.Fatalf("chat -m streamed:\n%q\nwant\n%q\n%s", r.Stdout, want, r)
	}
	for _, req := range e.Model.Requests() {
		if !req.Stream {
			t.Fatalf("a user turn's model call did not stream:\n%s", e.Model)
		}
	}
}

// §4: with --no-stream (and with agent.stream false) the call is not
// streamed and the reply is printed whole, once.
func TestChatOneShotNoStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	r := e.MustRun("chat", "--no-stream", "-m", "hello there")
	if r.Stdout != "fake reply to: hello there\n" {
		t.Fatalf("chat --no-stream -m = %q", r.Stdout)
	}
	e.SetConfig("agent.stream", "false")
	r = e.MustRun("chat", "-m", "hello again")
	if r.Stdout != "fake reply to: hello again\n" {
		t.Fatalf("chat -m with agent.stream false = %q", r.Stdout)
	}
	for _, req := range e.Model.Requests() {
		if req.Stream {
			t.Fatalf("a model call streamed with streaming off:\n%s", e.Model)
		}
	}
}

// §4: the interactive chat streams too: the first words of a held reply
// are shown while the turn runs, then the rest on the same line.
func TestChatREPLStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	hold := make(chan struct{})
	e.Model.Enqueue(fakeopenai.Reply{Text: "Streaming into the terminal.", Hold: hold})
	p := e.Start("chat")
	p.WaitStdout(20*time.Second, "Ctrl-D exits")
	p.Send("stream something")
	p.WaitStdout(20*time.Second, "Streaming ")
	if strings.Contains(p.Stdout(), "terminal.") {
		t.Fatalf("reply complete before release:\n%s", p.Stdout())
	}
	close(hold)
	p.WaitStdout(20*time.Second, "Streaming into the terminal.\n")
	p.CloseStdin()
	if r := p.Wait(20 * time.Second); r.Code != 0 || strings.Count(r.Stdout, "Streaming") != 1 {
		t.Fatalf("chat:\n%s", r)
	}
}

// §4: a gateway streams a reply to a TUI connection as chat.delta
// notifications (partial text while the model holds the rest, the tool
// call line), then the whole reply as chat.message.
func TestGatewayStreamsChatDelta(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	const conv = "tui:main"
	hold := make(chan struct{})
	e.Model.Enqueue(fakeopenai.Call("list_dir", map[string]any{"path": "."}),
		fakeopenai.Reply{Text: "The workspace is empty.", Hold: hold})
	c := e.Dial()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := controlapi.Invoke(ctx, c, api.ChatAttach, api.ChatAttachParams{Conversation: conv}); err != nil {
		t.Fatal(err)
	}
	if _, err := controlapi.Invoke(ctx, c, api.ChatSend, api.ChatSendParams{Conversation: conv, Text: "what's there?"}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		select {
		case n, ok := <-c.Notifications():
			if !ok {
				t.Fatalf("connection closed\n%s", g.Log())
			}
			if d, ok, err := controlapi.DecodeNotification(n, api.NotifyChatDelta); ok {
				if err != nil || d.Conversation != conv {
					t.Fatalf("chat.delta %+v %v", d, err)
				}
				if d.Tool != nil {
					seen = append(seen, "tool:"+d.Tool.Name)
				} else {
					seen = append(seen, d.Text)
				}
				if d.Text == "The " {
					close(hold) // the first words arrived while the rest was held
				}
				continue
			}
			m, ok, err := controlapi.DecodeNotification(n, api.NotifyChatMessage)
			if !ok || err != nil || !m.Reply {
				continue
			}
			want := []string{"tool:list_dir", "The ", "workspace ", "is ", "empty."}
			if m.Content != "The workspace is empty." || strings.Join(seen, "|") != strings.Join(want, "|") {
				t.Fatalf("reply %q after deltas %q", m.Content, seen)
			}
			return
		case <-ctx.Done():
			t.Fatalf("no streamed reply; deltas %q\n%s", seen, g.Log())
		}
	}
}

// §4: through the gateway, a Telegram reply is sent at its first words
// (plain) while the model still writes, and the same message is edited
// into the whole, formatted reply: one message, not two.
func TestGatewayTelegramStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	bot := telegramtest.New(t)
	e.PatchConfig(map[string]any{"channels.telegram.enabled": true, "channels.telegram.token": telegramtest.Token,
		"channels.telegram.allow_from": []int64{42}, "channels.telegram.api_url": bot.URL})
	hold := make(chan struct{})
	e.Model.Enqueue(fakeopenai.Reply{Text: "All is well today.", Hold: hold})
	g := e.StartGateway()
	defer g.Stop()
	bot.Push(42, 42, "how are things?")
	first := bot.Next(t)
	if first.Edit || first.Text != "All " || first.ParseMode != "" {
		t.Fatalf("first send %+v\n%s", first, g.Log())
	}
	close(hold)
	final := bot.NextReply(t)
	if !final.Edit || final.MessageID != first.MessageID || final.Text != `All is well today\.` {
		t.Fatalf("final %+v", final)
	}
}
