// Package fakeopenai is Raven's own OpenAI-compatible model server for tests:
// /v1/chat/completions and /v1/models on loopback, scripted and recording every request.
package fakeopenai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// DefaultModel is the model id /v1/models lists.
const DefaultModel = "fake"

// Options configure a Server.
type Options struct {
	// Models are the ids /v1/models lists (default [DefaultModel]).
	Models []string
	// Default answers requests no queued reply or rule takes (default
	// DefaultResponder).
	Default Responder
}

// Server is a running fake. A request is answered by the first queued
// reply (Enqueue), else the first matching rule (On), else the default.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu      sync.Mutex
	queue   []Reply
	rules   []Rule
	reqs    []Request
	calls   int
	changed chan struct{} // closed and replaced on every recorded request
}

// New starts a server on loopback; Close stops it.
func New(o Options) *Server {
	if len(o.Models) == 0 {
		o.Models = []string{DefaultModel}
	}
	if o.Default == nil {
		o.Default = DefaultResponder
	}
	s := &Server{opts: o, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fakeopenai: no route %s %s", r.Method, r.URL.Path))
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// Start is New for a test: the server closes with t.
func Start(t testing.TB, o Options) *Server {
	s := New(o)
	t.Cleanup(s.Close)
	return s
}

// URL is the server root (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the API root clients take as OPENAI_BASE_URL (URL()+"/v1").
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Close stops the server, ending held replies.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue appends replies served, in order, before any rule.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// On adds a rule after the existing ones.
func (s *Server) On(m Matcher, r Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, Rule{Match: m, Reply: r})
}

// Queued is how many enqueued replies are still unserved.
func (s *Server) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns a copy of the chat requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequests blocks until at least n chat requests arrived or ctx ends,
// and returns them all.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		reqs, changed := append([]Request(nil), s.reqs...), s.changed
		s.mu.Unlock()
		if len(reqs) >= n {
			return reqs, nil
		}
		select {
		case <-ctx.Done():
			return reqs, fmt.Errorf("fakeopenai: %d of %d requests arrived: %w", len(reqs), n, ctx.Err())
		case <-changed:
		}
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakeopenai: read body: "+err.Error())
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "fakeopenai: bad request body: "+err.Error())
		return
	}
	req.Header, req.Body = r.Header.Clone(), json.RawMessage(bytes.Clone(body))

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	s.calls++
	n := s.calls
	reply, ok := Reply{}, false
	if len(s.queue) > 0 {
		reply, s.queue, ok = s.queue[0], s.queue[1:], true
	}
	rules := append([]Rule(nil), s.rules...)
	s.mu.Unlock()

	if !ok {
		reply = s.opts.Default(req)
		for _, rule := range rules {
			if rule.Match(req) {
				reply = rule.Reply(req)
				break
			}
		}
	}
	if reply.Wait != nil {
		select {
		case <-reply.Wait:
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Text)
		return
	}
	if req.Stream {
		s.stream(w, r, req, reply, n)
		return
	}
	writeJSON(w, http.StatusOK, completion(req, reply, n))
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, id := range s.opts.Models {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1_700_000_000, OwnedBy: "raven-fakeopenai"})
	}
	writeJSON(w, http.StatusOK, list)
}

// completion renders reply in the chat.completion shape the SDK decodes.
func completion(req Request, reply Reply, n int) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		msg["content"] = reply.Text
	}
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
		var calls []map[string]any
		for i, c := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": callID(c, n, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", n),
		"object":  "chat.completion",
		"created": 1_700_000_000 + n,
		"model":   req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   usage(req, reply),
	}
}

func callID(c ToolCall, n, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_fake_%d_%d", n, i+1)
}

// usage is a rough, deterministic token count: a token per four bytes.
func usage(req Request, reply Reply) map[string]any {
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content)/4 + 1
	}
	out := len(reply.Text)/4 + 1
	for _, c := range reply.ToolCalls {
		out += len(c.Arguments)/4 + 1
	}
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	kind := "invalid_request_error"
	if status >= 500 {
		kind = "server_error"
	} else if status == http.StatusTooManyRequests {
		kind = "rate_limit_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// String summarises what the server saw, for failure messages.
func (s *Server) String() string {
	reqs := s.Requests()
	var sb strings.Builder
	fmt.Fprintf(&sb, "fakeopenai: %d request(s)", len(reqs))
	for i, r := range reqs {
		fmt.Fprintf(&sb, "\n  %d: model=%s tools=%v last=%s %q", i+1, r.Model, r.ToolNames(), r.Last().Role, oneLine(r.Last().Content))
	}
	return sb.String()
}
