package fakeopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/llm/openai"
)

// provider is Raven's real OpenAI provider on the fake: the wire path the
// binary takes.
func provider(t *testing.T, s *fakeopenai.Server) *openai.Provider {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	p, err := openai.New(openai.Config{Model: "fake", BaseURL: s.BaseURL(), APIKey: "x", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var readTool = llm.Tool{Name: "read_file", Description: "Read a file", Parameters: map[string]any{
	"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}

func TestRepliesInOrderQueueRulesDefault(t *testing.T) {
	ctx := context.Background()
	s := fakeopenai.Start(t, fakeopenai.Options{})
	p := provider(t, s)
	s.On(fakeopenai.LastUserContains("WEATHER"), fakeopenai.Always(fakeopenai.Text("sunny")))
	s.Enqueue(fakeopenai.Call("read_file", map[string]string{"path": "notes.md"}), fakeopenai.Text("queued second"))

	base := []llm.Message{{Role: llm.RoleSystem, Content: "You are Raven."}, {Role: llm.RoleUser, Content: "what's the weather?"}}
	steps := []struct {
		name     string
		messages []llm.Message
		want     llm.Response
	}{
		{"queue first: tool call", base, llm.Response{ToolCalls: []llm.ToolCall{{ID: "call_fake_1_1", Name: "read_file", Arguments: `{"path":"notes.md"}`}}, FinishReason: "tool_calls"}},
		{"queue second", append(base, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_fake_1_1", Name: "read_file", Arguments: `{}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: "call_fake_1_1", Content: "# notes"}), llm.Response{Content: "queued second", FinishReason: "stop"}},
		{"rule", base, llm.Response{Content: "sunny", FinishReason: "stop"}},
		{"default echo", []llm.Message{{Role: llm.RoleUser, Content: "hi\nthere"}}, llm.Response{Content: "fake reply to: hi there", FinishReason: "stop"}},
	}
	for _, st := range steps {
		got, err := p.Chat(ctx, llm.Request{Messages: st.messages, Tools: []llm.Tool{readTool}})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got.Usage = llm.Usage{}
		if g, w := mustJSON(got), mustJSON(st.want); g != w {
			t.Fatalf("%s: got %s want %s", st.name, g, w)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r0 := reqs[0]
	if r0.Model != "fake" || r0.System() != "You are Raven." || r0.LastUser() != "what's the weather?" ||
		!r0.HasTool("read_file") || r0.Tools[0].Description != "Read a file" || !strings.Contains(string(r0.Tools[0].Parameters), `"path"`) ||
		r0.Header.Get("Authorization") != "Bearer x" {
		t.Fatalf("request 0 = %+v", r0)
	}
	r1 := reqs[1]
	if res, ok := r1.ToolResult("call_fake_1_1"); !ok || res.Content != "# notes" || r1.Messages[2].ToolCalls[0].Name != "read_file" {
		t.Fatalf("request 1 messages = %+v", r1.Messages)
	}
	if s.Queued() != 0 {
		t.Fatalf("queue not drained")
	}
}

func TestDefaultEndsToolLoopAndAfterToolResult(t *testing.T) {
	s := fakeopenai.Start(t, fakeopenai.Options{})
	p := provider(t, s)
	s.On(fakeopenai.All(fakeopenai.Offers("read_file"), fakeopenai.LastUserContains("read")), func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Call("read_file", `{"path":"a"}`)
	})
	// Rules are consulted in order: put the tool-result rule first.
	s2 := fakeopenai.Start(t, fakeopenai.Options{})
	s2.On(fakeopenai.AfterToolResult(), fakeopenai.Always(fakeopenai.Text("summarised")))
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "read a"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "x"}}
	// A tool result still matches "read" in the last user message: the
	// rule answers, so the test author controls the loop.
	got, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Tools: []llm.Tool{readTool}})
	if err != nil || len(got.ToolCalls) != 1 {
		t.Fatalf("rule = %+v, %v", got, err)
	}
	got, err = p.Chat(context.Background(), llm.Request{Messages: msgs})
	if err != nil || got.Content != "done." {
		t.Fatalf("default after tool result = %+v, %v", got, err)
	}
	got, err = provider(t, s2).Chat(context.Background(), llm.Request{Messages: msgs})
	if err != nil || got.Content != "summarised" {
		t.Fatalf("AfterToolResult rule = %+v, %v", got, err)
	}
}

func TestErrorsAndModels(t *testing.T) {
	ctx := context.Background()
	s := fakeopenai.Start(t, fakeopenai.Options{Models: []string{"fake", "fake-big"}})
	p := provider(t, s)
	s.Enqueue(fakeopenai.Error(http.StatusBadRequest, "tools are not supported"))
	_, err := p.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "tools are not supported") {
		t.Fatalf("error reply = %v", err)
	}

	res, err := http.Get(s.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil || len(list.Data) != 2 || list.Data[1].ID != "fake-big" {
		t.Fatalf("models = %+v, %v", list, err)
	}

	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v1/nope", "", 404},
		{"POST", "/v1/chat/completions", "{", 400},
	} {
		req, _ := http.NewRequest(c.method, s.URL()+c.path, strings.NewReader(c.body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || !strings.Contains(string(b), `"error"`) {
			t.Fatalf("%s %s = %d %s", c.method, c.path, res.StatusCode, b)
		}
	}
}

func TestWaitRequestsAndHeldReply(t *testing.T) {
	s := fakeopenai.Start(t, fakeopenai.Options{})
	p := provider(t, s)
	release := make(chan struct{})
	s.Enqueue(fakeopenai.Reply{Text: "late", Wait: release})
	done := make(chan *llm.Response, 1)
	go func() {
		r, _ := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "slow"}}})
		done <- r
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs, err := s.WaitRequests(ctx, 1)
	if err != nil || reqs[0].LastUser() != "slow" {
		t.Fatalf("WaitRequests = %+v, %v", reqs, err)
	}
	select {
	case <-done:
		t.Fatal("held reply answered before release")
	default:
	}
	close(release)
	if r := <-done; r == nil || r.Content != "late" {
		t.Fatalf("held reply = %+v", r)
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := s.WaitRequests(short, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitRequests on ended ctx = %v", err)
	}
	if !strings.Contains(s.String(), `"slow"`) {
		t.Fatalf("String() = %s", s)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
