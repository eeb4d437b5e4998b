package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/llmtest"
	"github.com/raven-agent/raven/internal/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newProvider(t *testing.T, base string) *openai.Provider {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	p, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: base + "/v1", APIKey: "sk-test", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// body decodes a recorded request body.
func body(t *testing.T, r llmtest.Recorded) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	return m
}

// jsonEq compares a decoded JSON value with the JSON text want.
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s:\n got  %s\n want %s", what, g, want)
	}
}

func TestChatText(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_text.json"})
	p := newProvider(t, srv.URL)
	temp := 0.2
	resp, err := p.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are Raven."},
			{Role: llm.RoleUser, Content: "What changed today?"},
		},
		MaxTokens:   256,
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Content:      "Your 10:00 stand-up moved to 10:30. Nothing else changed today.",
		FinishReason: "stop",
		Usage:        llm.Usage{InputTokens: 58, OutputTokens: 17},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("sent %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	b := body(t, r)
	jsonEq(t, "model", b["model"], `"gpt-4o-mini"`)
	jsonEq(t, "messages", b["messages"], `[{"role":"system","content":"You are Raven."},{"role":"user","content":"What changed today?"}]`)
	jsonEq(t, "temperature", b["temperature"], `0.2`)
	// Not api.openai.com: the widely supported max_tokens is used.
	jsonEq(t, "max_tokens", b["max_tokens"], `256`)
	for _, k := range []string{"tools", "tool_choice", "max_completion_tokens", "reasoning_effort"} {
		if _, ok := b[k]; ok {
			t.Errorf("unexpected %q in request", k)
		}
	}
	if p.Name() != "openai/gpt-4o-mini" {
		t.Errorf("Name = %q", p.Name())
	}
}

func TestChatToolsRoundTrip(t *testing.T) {
	tools := []llm.Tool{
		{Name: "read_file", Description: "Read a file in the workspace.", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"},
		}},
		{Name: "now", Description: "Current time."},
	}
	history := []llm.Message{
		{Role: llm.RoleUser, Content: "Summarise my notes."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.md"}`}, {ID: "call_2", Name: "now", Arguments: `{}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "# A"},
		{Role: llm.RoleTool, ToolCallID: "call_2", Name: "now", Content: "09:00"},
	}
	wantMessages := `[
		{"role":"user","content":"Summarise my notes."},
		{"role":"assistant","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"}},
			{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"# A"},
		{"role":"tool","tool_call_id":"call_2","content":"09:00"}]`
	wantTools := `[
		{"type":"function","function":{"name":"read_file","description":"Read a file in the workspace.",
			"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
		{"type":"function","function":{"name":"now","description":"Current time.","parameters":{"type":"object","properties":{}}}}]`

	tests := []struct {
		choice llm.ToolChoice
		want   string
	}{
		{"", `"auto"`},
		{"auto", `"auto"`},
		{"required", `"required"`},
		{"none", `"none"`},
		{"read_file", `{"type":"function","function":{"name":"read_file"}}`},
	}
	for _, tt := range tests {
		t.Run("choice="+string(tt.choice), func(t *testing.T) {
			srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_tool_calls.json"})
			p := newProvider(t, srv.URL)
			resp, err := p.Chat(context.Background(), llm.Request{Model: "gpt-4.1", Messages: history, Tools: tools, ToolChoice: tt.choice})
			if err != nil {
				t.Fatal(err)
			}
			wantCalls := []llm.ToolCall{
				{ID: "call_Qd8mYk2vH4xN7tB1rZ0pLs3W", Name: "read_file", Arguments: `{"path":"notes/today.md"}`},
				{ID: "call_Vb5nJ9eR1cT6yU2iO8aS4dF7", Name: "list_dir", Arguments: `{"path":"notes","recursive":false}`},
			}
			if !reflect.DeepEqual(resp.ToolCalls, wantCalls) || resp.FinishReason != "tool_calls" || resp.Content != "" {
				t.Errorf("got %+v", resp)
			}
			b := body(t, srv.Requests()[0])
			jsonEq(t, "model", b["model"], `"gpt-4.1"`) // the request's model wins
			jsonEq(t, "messages", b["messages"], wantMessages)
			jsonEq(t, "tools", b["tools"], wantTools)
			jsonEq(t, "tool_choice", b["tool_choice"], tt.want)
		})
	}
}

func TestChatOllamaToolCalls(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/ollama_tool_calls.json"})
	p := newProvider(t, srv.URL)
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "notes?"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "call_6k2mdn3x", Name: "read_file", Arguments: `{"path":"notes/today.md"}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Usage.InputTokens != 211 {
		t.Errorf("got %+v", resp)
	}
}

func TestChatRejectsBadMessages(t *testing.T) {
	srv := llmtest.NewReplay(t)
	p := newProvider(t, srv.URL)
	for _, m := range []llm.Message{{Role: "robot", Content: "x"}, {Role: llm.RoleTool, Content: "orphan"}} {
		if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{m}}); err == nil {
			t.Errorf("message %+v accepted", m)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for invalid input", n)
	}
}

func TestChatErrors(t *testing.T) {
	tests := []struct {
		name       string
		step       llmtest.Step
		wantStatus int
		wantMsg    string
	}{
		{"400 invalid tools", llmtest.Step{Status: 400, File: "testdata/error_400_tools.json"}, 400, "Invalid 'tools[0].function.name'"},
		{"500 non-JSON body", llmtest.Step{Status: 502, Body: "<html>Bad Gateway</html>", Header: map[string]string{"Content-Type": "text/html"}}, 502, "Bad Gateway"},
		{"malformed body", llmtest.Step{File: "testdata/malformed.json"}, 200, "malformed response body"},
		{"no choices", llmtest.Step{Body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`}, 200, "no choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewReplay(t, tt.step)
			p := newProvider(t, srv.URL)
			_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *llm.APIError", err)
			}
			if ae.StatusCode != tt.wantStatus || !strings.Contains(ae.Message, tt.wantMsg) {
				t.Errorf("got status %d message %q", ae.StatusCode, ae.Message)
			}
			if ae.URL != srv.URL+"/v1/chat/completions" || ae.Provider != "openai" {
				t.Errorf("got provider %q URL %q", ae.Provider, ae.URL)
			}
		})
	}
}

func TestChatUnreachable(t *testing.T) {
	base := llmtest.RefusedURL(t)
	p := newProvider(t, base)
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.Retryable() {
		t.Fatalf("err = %v, want retryable APIError without status", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot reach "+base+"/v1/chat/completions") || !strings.Contains(msg, "connection refused") {
		t.Errorf("message %q should name the URL and the cause", msg)
	}
	if strings.Count(msg, "\n") > 0 || strings.Contains(msg, "goroutine") {
		t.Errorf("message %q is not one line", msg)
	}
}

func TestChatCancelEndsCall(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{Block: true})
	p := newProvider(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		done <- err
	}()
	<-srv.Arrived()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want Canceled", err)
		}
	case <-time.After(10 * time.Second): // a failure bound, not a wait for behaviour
		t.Fatal("Chat did not return after cancel")
	}
}

// The retry wrapper drives the real provider: every wait is on the fake clock.
func TestChatRetries(t *testing.T) {
	e429 := llmtest.Step{Status: 429, File: "testdata/error_429.json", Header: map[string]string{"Retry-After": "20"}}
	e500 := llmtest.Step{Status: 500, File: "testdata/error_500.json"}
	ok := llmtest.Step{File: "testdata/chat_text.json"}
	tests := []struct {
		name       string
		steps      []llmtest.Step
		waits      []time.Duration
		wantStatus int
	}{
		{"429 with Retry-After then 200", []llmtest.Step{e429, ok}, []time.Duration{20 * time.Second}, 0},
		{"500 then 200", []llmtest.Step{e500, ok}, []time.Duration{750 * time.Millisecond}, 0},
		{"500 exhausts retries", []llmtest.Step{e500, e500, e500}, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond}, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewReplay(t, tt.steps...)
			fc := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			p := llm.WithRetry(newProvider(t, srv.URL), llm.RetryConfig{Clock: fc, Jitter: func() float64 { return 0.5 }})
			done := make(chan error, 1)
			go func() {
				_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
				done <- err
			}()
			for _, w := range tt.waits {
				fc.BlockUntil(1)
				fc.Advance(w - time.Nanosecond)
				if fc.Waiters() != 1 {
					t.Fatalf("retry fired before %v", w)
				}
				fc.Advance(time.Nanosecond)
			}
			err := <-done
			if srv.Pending() != 0 {
				t.Errorf("%d replay steps unused", srv.Pending())
			}
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.StatusCode != tt.wantStatus || !strings.Contains(ae.Message, "Sorry about that") {
				t.Fatalf("err = %v, want APIError %d", err, tt.wantStatus)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []openai.Config{{}, {Model: "m", BaseURL: "localhost:11434"}, {Model: "m", BaseURL: "ftp://x"}} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestChatAttemptTimeoutIsRetryable(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{Block: true})
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	p, err := openai.New(openai.Config{Label: "ollama", Model: "qwen2.5:7b", BaseURL: srv.URL + "/v1", HTTPClient: hc, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.Retryable() || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a retryable APIError", err)
	}
	if !strings.Contains(err.Error(), "ollama: cannot reach "+srv.URL+"/v1/chat/completions: no response before the request timeout") {
		t.Errorf("message %q", err)
	}
}

func TestChatUsesMaxCompletionTokensOnOpenAI(t *testing.T) {
	// Only OpenAI's own host gets max_completion_tokens; route it to the replay server.
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_text.json"})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: redirect{to: srv.URL, tr: tr}}
	p, err := openai.New(openai.Config{Model: "o4-mini", APIKey: "sk-test", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, MaxTokens: 64}); err != nil {
		t.Fatal(err)
	}
	b := body(t, srv.Requests()[0])
	jsonEq(t, "max_completion_tokens", b["max_completion_tokens"], `64`)
	if _, ok := b["max_tokens"]; ok {
		t.Error("max_tokens sent to OpenAI")
	}
}

type redirect struct {
	to string
	tr *http.Transport
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != "api.openai.com" {
		return nil, errors.New("unexpected host " + req.URL.Host)
	}
	u := *req.URL
	u.Scheme, u.Host = "http", strings.TrimPrefix(r.to, "http://")
	out := req.Clone(req.Context())
	out.URL, out.Host = &u, ""
	return r.tr.RoundTrip(out)
}

// NoReasoning (the Sentinel planner) turns reasoning down as far as each
// OpenAI reasoning model allows; other models and servers get no
// reasoning_effort at all, which they would reject.
func TestChatNoReasoningOnOpenAI(t *testing.T) {
	tests := []struct {
		model, base string
		noReasoning bool
		want        string // "" = not sent
	}{
		{model: "o4-mini", noReasoning: true, want: `"low"`},
		{model: "o3", noReasoning: true, want: `"low"`},
		{model: "gpt-5-mini", noReasoning: true, want: `"minimal"`},
		{model: "gpt-5.1", noReasoning: true, want: `"none"`},
		{model: "gpt-4o-mini", noReasoning: true},
		{model: "o4-mini"},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_text.json"})
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			p, err := openai.New(openai.Config{Model: tc.model, APIKey: "sk-test", HTTPClient: &http.Client{Transport: redirect{to: srv.URL, tr: tr}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, NoReasoning: tc.noReasoning}); err != nil {
				t.Fatal(err)
			}
			b := body(t, srv.Requests()[0])
			got, ok := b["reasoning_effort"]
			if tc.want == "" {
				if ok {
					t.Fatalf("reasoning_effort %s sent", got)
				}
				return
			}
			jsonEq(t, "reasoning_effort", got, tc.want)
		})
	}
	// A local OpenAI-compatible server never gets it, whatever the model name.
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_text.json"})
	p := newProvider(t, srv.URL)
	if _, err := p.Chat(context.Background(), llm.Request{Model: "o4-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, NoReasoning: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := body(t, srv.Requests()[0])["reasoning_effort"]; ok {
		t.Fatal("reasoning_effort sent to a local server")
	}
}
