package sim

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/llm/openai"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

var streamingSection = section{
	name:  "streaming",
	title: "Streaming — a reply shown while the model writes it",
	blurb: "Raven's real OpenAI-compatible provider streams from a model server on loopback " +
		"(Server-Sent Events, through openai-go's accumulator). The owner's turn passes each delta " +
		"to the terminal as it arrives, with a line for the tool call; the whole reply still " +
		"arrives as one message at the end, which is what a webhook gets.",
	run: runStreaming,
}

// streamScreen is a terminal that streams: it prints each delta as it
// arrives, then the whole reply as every surface gets it.
type streamScreen struct {
	screen
	deltas *int
}

func (s streamScreen) Stream(_ context.Context, d spine.Delta) {
	*s.deltas++
	if d.Tool != nil {
		s.e.emit(Event{Kind: "chat.delta", Label: "stream", Text: "tool line: " + channels.ToolLine(d.Tool),
			Data: map[string]any{"tool": d.Tool.Name, "arguments": d.Tool.Arguments}})
		return
	}
	s.e.emit(Event{Kind: "chat.delta", Label: "stream", Text: "+ " + quote(d.Text), Data: map[string]any{"text": d.Text}})
}

func runStreaming(ctx context.Context, e *env) error {
	e.clk.Set(at(3, 9, 0))
	srv := fakeopenai.New(fakeopenai.Options{})
	defer srv.Close()
	srv.Enqueue(fakeopenai.Call("list_dir", map[string]any{"path": "notes"}),
		fakeopenai.Text("Your notes folder holds plumber.md and shopping.md."))
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	prov, err := openai.New(openai.Config{Label: "loopback", Model: fakeopenai.DefaultModel, BaseURL: srv.BaseURL(), HTTPClient: hc})
	if err != nil {
		return err
	}
	rt, err := e.newRuntime(ctx, build{model: &narrated{inner: prov, e: e}})
	if err != nil {
		return err
	}
	for _, f := range []string{"plumber.md", "shopping.md"} {
		if err := writeNote(rt, f); err != nil {
			return err
		}
	}
	deltas := 0
	if _, err := e.attach(ctx, rt, owner, streamScreen{screen: screen{e}, deltas: &deltas}); err != nil {
		return err
	}
	reply, err := e.turn(ctx, rt, "What's in my notes folder?")
	if err != nil {
		return err
	}
	reqs := srv.Requests()
	streamed := 0
	for _, r := range reqs {
		if r.Stream && strings.Contains(string(r.Body), `"include_usage":true`) {
			streamed++
		}
	}
	if streamed != len(reqs) || deltas < 3 {
		return fmt.Errorf("streaming: %d of %d model calls streamed, %d deltas shown", streamed, len(reqs), deltas)
	}
	e.emit(Event{Kind: "stream.summary", Label: "stream", Text: fmt.Sprintf("%d model calls streamed (stream: true, include_usage), %d deltas shown before the reply", streamed, deltas),
		Why:  "text reaches the owner as the model writes it; retries happen only before the first delta, so nothing shown is ever repeated",
		Data: map[string]any{"calls": streamed, "deltas": deltas, "reply": reply}})
	return nil
}

func writeNote(rt *runtime.Runtime, name string) error {
	dir := filepath.Join(rt.Workspace().Root(), "notes")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte("# "+name+"\n"), 0o600)
}
