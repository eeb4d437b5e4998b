package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/llmtest"
	"github.com/raven-agent/raven/internal/llm/providers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsBadSpecs(t *testing.T) {
	if _, err := providers.New("  ", providers.Options{}); !errors.Is(err, llm.ErrNoModel) {
		t.Fatalf("empty spec: err = %v, want ErrNoModel", err)
	}
	tests := []struct {
		spec   string
		opts   providers.Options
		errSub string
	}{
		{"gpt-4o-mini", providers.Options{}, "not of the form provider/model"},
		{"/gpt-4o-mini", providers.Options{}, "not of the form provider/model"},
		{"openai/", providers.Options{APIKey: "k"}, "no model name"},
		{"gemini/pro", providers.Options{APIKey: "k"}, `unknown provider "gemini"`},
		{"scripted:", providers.Options{}, "no script path"},
		{"openai/gpt-4o-mini", providers.Options{}, "needs an API key"},
		{"anthropic/claude-sonnet-4-20250514", providers.Options{}, "needs an API key"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := providers.New(tt.spec, tt.opts)
			var se *providers.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *SpecError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.errSub) || !strings.Contains(msg, providers.ValidSpecs) {
				t.Errorf("err = %q, want it to contain %q and list the valid forms", msg, tt.errSub)
			}
		})
	}
	if _, err := providers.New("openai/m", providers.Options{BaseURL: "not a url"}); err == nil {
		t.Error("bad base URL accepted")
	}
}

func TestNewScripted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "day.json")
	if err := os.WriteFile(path, []byte(`{"turns":[{"content":"hello"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := providers.New("scripted:"+path, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), llm.Request{})
	if err != nil || resp.Content != "hello" {
		t.Fatalf("got %v, %v", resp, err)
	}
	if p.Name() != "scripted:"+path {
		t.Errorf("Name = %q", p.Name())
	}
	if _, err := providers.New("scripted:"+filepath.Join(t.TempDir(), "none.json"), providers.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing script: err = %v", err)
	}
}

// recorder answers every request with a canned body, recording it, so the
// default endpoints can be checked without touching the network.
type recorder struct {
	body string
	mu   sync.Mutex
	reqs []*http.Request
	sent []map[string]any
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	data, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.sent = append(r.sent, m)
	r.mu.Unlock()
	return &http.Response{
		StatusCode: 200, Header: http.Header{"Content-Type": []string{"application/json"}},
		Body: io.NopCloser(strings.NewReader(r.body)), Request: req,
	}, nil
}

const (
	openaiBody    = `{"id":"chatcmpl-1","object":"chat.completion","created":1747296385,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	anthropicBody = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
)

func TestNewDefaultEndpoints(t *testing.T) {
	tests := []struct {
		spec, apiKey, baseURL, body   string
		wantName, wantURL, wantModel  string
		wantAuth, maxField, notMaxFld string
	}{
		{"ollama/qwen2.5:7b", "", "", openaiBody, "ollama/qwen2.5:7b", "http://localhost:11434/v1/chat/completions", "qwen2.5:7b", "Bearer unused", "max_tokens", "max_completion_tokens"},
		{"openai/gpt-4o-mini", "sk-1", "", openaiBody, "openai/gpt-4o-mini", "https://api.openai.com/v1/chat/completions", "gpt-4o-mini", "Bearer sk-1", "max_completion_tokens", "max_tokens"},
		{"openai/meta-llama/Llama-3.1-8B-Instruct", "", "http://gpu-box:8000/v1", openaiBody, "openai/meta-llama/Llama-3.1-8B-Instruct", "http://gpu-box:8000/v1/chat/completions", "meta-llama/Llama-3.1-8B-Instruct", "Bearer unused", "max_tokens", "max_completion_tokens"},
		{"anthropic/claude-sonnet-4-20250514", "sk-ant", "", anthropicBody, "anthropic/claude-sonnet-4-20250514", "https://api.anthropic.com/v1/messages", "claude-sonnet-4-20250514", "Bearer sk-ant", "max_tokens", "max_completion_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			rec := &recorder{body: tt.body}
			p, err := providers.New(tt.spec, providers.Options{APIKey: tt.apiKey, BaseURL: tt.baseURL, HTTPClient: &http.Client{Transport: rec}})
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tt.wantName {
				t.Errorf("Name = %q, want %q", p.Name(), tt.wantName)
			}
			resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, MaxTokens: 100})
			if err != nil || resp.Content != "hi" {
				t.Fatalf("got %v, %v", resp, err)
			}
			req, sent := rec.reqs[0], rec.sent[0]
			if req.URL.String() != tt.wantURL {
				t.Errorf("URL = %s, want %s", req.URL, tt.wantURL)
			}
			if got := req.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if sent["model"] != tt.wantModel {
				t.Errorf("model = %v, want %s", sent["model"], tt.wantModel)
			}
			if sent[tt.maxField] != 100.0 {
				t.Errorf("%s = %v, want 100", tt.maxField, sent[tt.maxField])
			}
			if _, ok := sent[tt.notMaxFld]; ok {
				t.Errorf("unexpected %s", tt.notMaxFld)
			}
		})
	}
}

func TestNewWrapsRetry(t *testing.T) {
	e500 := llmtest.Step{Status: 500, Body: `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`}
	ok := llmtest.Step{Body: openaiBody}
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)

	t.Run("retries on the injected clock", func(t *testing.T) {
		srv := llmtest.NewReplay(t, e500, ok)
		fc := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		p, err := providers.New("ollama/qwen2.5:7b", providers.Options{BaseURL: srv.URL + "/v1", HTTPClient: hc, Clock: fc})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			done <- err
		}()
		fc.BlockUntil(1)
		fc.Advance(llm.DefaultBaseDelay) // equal jitter never exceeds the base delay
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("MaxAttempts 1 disables retries", func(t *testing.T) {
		srv := llmtest.NewReplay(t, e500)
		p, err := providers.New("ollama/qwen2.5:7b", providers.Options{BaseURL: srv.URL + "/v1", HTTPClient: hc, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 500 || ae.Provider != "ollama" {
			t.Fatalf("err = %v", err)
		}
	})
}
