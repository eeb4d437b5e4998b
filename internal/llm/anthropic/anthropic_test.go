package anthropic_test

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
	"github.com/raven-agent/raven/internal/llm/anthropic"
	"github.com/raven-agent/raven/internal/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const model = "claude-sonnet-4-20250514"

func newProvider(t *testing.T, base string) *anthropic.Provider {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	p, err := anthropic.New(anthropic.Config{Model: model, BaseURL: base, APIKey: "sk-ant-test", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func body(t *testing.T, r llmtest.Recorded) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	return m
}

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

func hi() []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: "hi"}} }

func TestChatText(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/message_text.json"})
	p := newProvider(t, srv.URL)
	temp := 0.3
	resp, err := p.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are Raven."},
			{Role: llm.RoleUser, Content: "What changed today?"},
			{Role: llm.RoleSystem, Content: "Be brief."},
		},
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Content:      "Your 10:00 stand-up moved to 10:30. Nothing else changed today.",
		FinishReason: "end_turn",
		Usage:        llm.Usage{InputTokens: 61, OutputTokens: 21},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	r := srv.Requests()[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("sent %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-ant-test" {
		t.Errorf("Authorization = %q", got)
	}
	b := body(t, r)
	jsonEq(t, "model", b["model"], `"`+model+`"`)
	jsonEq(t, "max_tokens", b["max_tokens"], `4096`)
	jsonEq(t, "temperature", b["temperature"], `0.3`)
	// System messages leave the turn list for the top-level system field.
	jsonEq(t, "system", b["system"], `[{"type":"text","text":"You are Raven."},{"type":"text","text":"Be brief."}]`)
	jsonEq(t, "messages", b["messages"], `[{"role":"user","content":[{"type":"text","text":"What changed today?"}]}]`)
	for _, k := range []string{"tools", "tool_choice", "thinking"} {
		if _, ok := b[k]; ok {
			t.Errorf("unexpected %q in request", k)
		}
	}
	if p.Name() != "anthropic/"+model {
		t.Errorf("Name = %q", p.Name())
	}
}

func TestChatToolsRoundTrip(t *testing.T) {
	tools := []llm.Tool{
		{Name: "read_file", Description: "Read a file in the workspace.", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}},
			"required": []any{"path"}, "additionalProperties": false,
		}},
		{Name: "now", Parameters: map[string]any{"type": "object", "properties": map[string]any{}, "required": []string{}}},
	}
	history := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are Raven."},
		{Role: llm.RoleUser, Content: "Summarise my notes."},
		{Role: llm.RoleAssistant, Content: "Reading.", ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"a.md"}`},
			{ID: "toolu_2", Name: "now", Arguments: `{"broken"`},
		}},
		{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "read_file", Content: "# A"},
		{Role: llm.RoleTool, ToolCallID: "toolu_2", Name: "now", Content: ""},
		{Role: llm.RoleUser, Content: "Also check the time."},
	}
	wantMessages := `[
		{"role":"user","content":[{"type":"text","text":"Summarise my notes."}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Reading."},
			{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.md"}},
			{"type":"tool_use","id":"toolu_2","name":"now","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"# A"}]},
			{"type":"tool_result","tool_use_id":"toolu_2"},
			{"type":"text","text":"Also check the time."}]}]`
	wantTools := `[
		{"name":"read_file","description":"Read a file in the workspace.",
			"input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}},
		{"name":"now","input_schema":{"type":"object","properties":{},"required":[]}}]`

	tests := []struct {
		choice llm.ToolChoice
		want   string
	}{
		{"", `{"type":"auto"}`},
		{"auto", `{"type":"auto"}`},
		{"required", `{"type":"any"}`},
		{"none", `{"type":"none"}`},
		{"read_file", `{"type":"tool","name":"read_file"}`},
	}
	for _, tt := range tests {
		t.Run("choice="+string(tt.choice), func(t *testing.T) {
			srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/message_tool_use.json"})
			p := newProvider(t, srv.URL)
			resp, err := p.Chat(context.Background(), llm.Request{Messages: history, Tools: tools, ToolChoice: tt.choice, MaxTokens: 1024})
			if err != nil {
				t.Fatal(err)
			}
			want := &llm.Response{
				Content:      "I'll read today's notes and list the folder.",
				FinishReason: "tool_use",
				Usage:        llm.Usage{InputTokens: 412, OutputTokens: 96},
				ToolCalls: []llm.ToolCall{
					{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read_file", Arguments: `{"path": "notes/today.md"}`},
					{ID: "toolu_01BvRzMk3fQe2sD9wWpA7nLx", Name: "list_dir", Arguments: `{"path": "notes", "recursive": false}`},
				},
			}
			if !reflect.DeepEqual(resp, want) {
				t.Errorf("got  %+v\nwant %+v", resp, want)
			}
			b := body(t, srv.Requests()[0])
			jsonEq(t, "max_tokens", b["max_tokens"], `1024`)
			jsonEq(t, "system", b["system"], `[{"type":"text","text":"You are Raven."}]`)
			jsonEq(t, "messages", b["messages"], wantMessages)
			jsonEq(t, "tools", b["tools"], wantTools)
			jsonEq(t, "tool_choice", b["tool_choice"], tt.want)
		})
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
		{"400 invalid request", llmtest.Step{Status: 400, File: "testdata/error_400.json"}, 400, "unexpected `tool_use_id`"},
		{"529 overloaded", llmtest.Step{Status: 529, File: "testdata/error_529.json"}, 529, "Overloaded"},
		{"502 non-JSON body", llmtest.Step{Status: 502, Body: "<html>Bad Gateway</html>", Header: map[string]string{"Content-Type": "text/html"}}, 502, "Bad Gateway"},
		{"malformed body", llmtest.Step{File: "testdata/malformed.json"}, 200, "malformed response body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewReplay(t, tt.step)
			p := newProvider(t, srv.URL)
			_, err := p.Chat(context.Background(), llm.Request{Messages: hi()})
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *llm.APIError", err)
			}
			if ae.StatusCode != tt.wantStatus || !strings.Contains(ae.Message, tt.wantMsg) {
				t.Errorf("got status %d message %q", ae.StatusCode, ae.Message)
			}
			if ae.URL != srv.URL+"/v1/messages" || ae.Provider != "anthropic" {
				t.Errorf("got provider %q URL %q", ae.Provider, ae.URL)
			}
		})
	}
}

func TestChatUnreachable(t *testing.T) {
	base := llmtest.RefusedURL(t)
	p := newProvider(t, base)
	_, err := p.Chat(context.Background(), llm.Request{Messages: hi()})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.Retryable() {
		t.Fatalf("err = %v, want retryable APIError without status", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot reach "+base+"/v1/messages") || !strings.Contains(msg, "connection refused") || strings.Contains(msg, "\n") {
		t.Errorf("message %q should be one line naming the URL and the cause", msg)
	}
}

func TestChatCancelEndsCall(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{Block: true})
	p := newProvider(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, llm.Request{Messages: hi()})
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

func TestChatRetries(t *testing.T) {
	e429 := llmtest.Step{Status: 429, File: "testdata/error_429.json", Header: map[string]string{"Retry-After": "15"}}
	e500 := llmtest.Step{Status: 500, File: "testdata/error_500.json"}
	e529 := llmtest.Step{Status: 529, File: "testdata/error_529.json"}
	ok := llmtest.Step{File: "testdata/message_text.json"}
	tests := []struct {
		name       string
		steps      []llmtest.Step
		waits      []time.Duration
		wantStatus int
	}{
		{"429 with Retry-After then 200", []llmtest.Step{e429, ok}, []time.Duration{15 * time.Second}, 0},
		{"529 then 200", []llmtest.Step{e529, ok}, []time.Duration{750 * time.Millisecond}, 0},
		{"500 exhausts retries", []llmtest.Step{e500, e500, e500}, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond}, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewReplay(t, tt.steps...)
			fc := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			p := llm.WithRetry(newProvider(t, srv.URL), llm.RetryConfig{Clock: fc, Jitter: func() float64 { return 0.5 }})
			done := make(chan error, 1)
			go func() {
				_, err := p.Chat(context.Background(), llm.Request{Messages: hi()})
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
			if !errors.As(err, &ae) || ae.StatusCode != tt.wantStatus || ae.Message != "Internal server error" {
				t.Fatalf("err = %v, want APIError %d", err, tt.wantStatus)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []anthropic.Config{{APIKey: "k"}, {Model: "m"}, {Model: "m", APIKey: "k", BaseURL: "api.anthropic.com"}} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// NoReasoning (the Sentinel planner) sends thinking disabled explicitly:
// what a model does when thinking is omitted depends on the model.
func TestChatNoReasoningDisablesThinking(t *testing.T) {
	for _, no := range []bool{true, false} {
		srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/message_text.json"})
		p := newProvider(t, srv.URL)
		if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, NoReasoning: no}); err != nil {
			t.Fatal(err)
		}
		got, ok := body(t, srv.Requests()[0])["thinking"]
		if !no {
			if ok {
				t.Fatalf("thinking %s sent without NoReasoning", got)
			}
			continue
		}
		jsonEq(t, "thinking", got, `{"type":"disabled"}`)
	}
}
