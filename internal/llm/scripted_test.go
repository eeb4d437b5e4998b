package llm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

func TestLoadScriptedReplaysInOrder(t *testing.T) {
	s, err := llm.LoadScripted("testdata/script_ok.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type want struct {
		content string
		calls   []llm.ToolCall
		finish  string
		errSub  string
	}
	wants := []want{
		{content: "Let me look.", finish: "tool_calls", calls: []llm.ToolCall{{ID: "call_1_1", Name: "read_file", Arguments: `{"path":"notes.md"}`}}},
		// A string argument is passed through verbatim, malformed JSON included.
		{finish: "tool_calls", calls: []llm.ToolCall{{ID: "c-raw", Name: "write_file", Arguments: `{"path": "x", oops`}}},
		{errSub: "turn 3: model overloaded"},
		{content: "Done.", finish: "stop"},
	}
	for i, w := range wants {
		resp, err := s.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "turn"}}})
		if w.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), w.errSub) {
				t.Fatalf("turn %d: err = %v, want containing %q", i+1, err, w.errSub)
			}
			continue
		}
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if resp.Content != w.content || resp.FinishReason != w.finish {
			t.Errorf("turn %d: got content %q finish %q, want %q %q", i+1, resp.Content, resp.FinishReason, w.content, w.finish)
		}
		if len(resp.ToolCalls) != len(w.calls) {
			t.Fatalf("turn %d: got %d calls, want %d", i+1, len(resp.ToolCalls), len(w.calls))
		}
		for j := range w.calls {
			if resp.ToolCalls[j] != w.calls[j] {
				t.Errorf("turn %d call %d: got %+v, want %+v", i+1, j, resp.ToolCalls[j], w.calls[j])
			}
		}
	}
	_, err = s.Chat(ctx, llm.Request{})
	if !errors.Is(err, llm.ErrExhausted) {
		t.Fatalf("after script: err = %v, want ErrExhausted", err)
	}
	for _, sub := range []string{"testdata/script_ok.json", "all 4 turns"} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("exhausted error %q does not mention %q", err, sub)
		}
	}
	if got := len(s.Requests()); got != 5 {
		t.Errorf("recorded %d requests, want 5", got)
	}
}

func TestLoadScriptedRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name, body, errSub string
	}{
		{"unknown top-level field", `{"turns":[],"extra":1}`, `unknown field "extra"`},
		{"unknown turn field", `{"turns":[{"content":"x","match":"y"}]}`, `unknown field "turns[0].match"`},
		{"unknown call field", `{"turns":[{"tool_calls":[{"name":"a","args":{}}]}]}`, `unknown field "turns[0].tool_calls[0].args"`},
		{"missing turns", `{}`, `missing "turns"`},
		{"call without name", `{"turns":[{"tool_calls":[{"arguments":{}}]}]}`, `missing "name"`},
		{"array arguments", `{"turns":[{"tool_calls":[{"name":"a","arguments":[1]}]}]}`, `object or a string`},
		{"trailing data", `{"turns":[]} {"turns":[]}`, `after the top-level object`},
		{"not json", `turns: []`, `decode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "script.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := llm.LoadScripted(path)
			var se *llm.ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *ScriptError", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.errSub) {
				t.Errorf("err = %q, want it to name %s and contain %q", err, path, tt.errSub)
			}
		})
	}
	if _, err := llm.LoadScripted(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}

func TestScriptedResponsesAreIndependentOfScript(t *testing.T) {
	s := llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{Name: "a", Arguments: "{}"}}},
	})
	resp, err := s.Chat(context.Background(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	resp.ToolCalls[0].Name = "mutated"
	if got := s.Remaining(); got != 0 {
		t.Errorf("Remaining = %d, want 0", got)
	}
	if s.Name() != "scripted:script" {
		t.Errorf("Name = %q", s.Name())
	}
}

func TestScriptedCancelledContextConsumesNoTurn(t *testing.T) {
	s := llm.NewScripted([]llm.Turn{{Content: "one"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Chat(ctx, llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
	if s.Remaining() != 1 {
		t.Fatalf("a cancelled call consumed a turn")
	}
}

func TestScriptedConcurrentCallsGetEachTurnOnce(t *testing.T) {
	const n = 64
	turns := make([]llm.Turn, n)
	for i := range turns {
		turns[i] = llm.Turn{Content: "t" + string(rune('A'+i%26)) + string(rune('0'+i/26))}
	}
	s := llm.NewScripted(turns)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]int{}
		exh  int
	)
	for range n + 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.Chat(context.Background(), llm.Request{})
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, llm.ErrExhausted) {
				exh++
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			seen[resp.Content]++
		}()
	}
	wg.Wait()
	if len(seen) != n || exh != 8 {
		t.Fatalf("got %d distinct turns and %d exhausted, want %d and 8", len(seen), exh, n)
	}
	for c, k := range seen {
		if k != 1 {
			t.Errorf("turn %q served %d times", c, k)
		}
	}
}

func BenchmarkScriptedChat(b *testing.B) {
	turns := make([]llm.Turn, b.N)
	for i := range turns {
		turns[i] = llm.Turn{Content: "ok", ToolCalls: []llm.ToolCall{{ID: "c", Name: "read_file", Arguments: `{"path":"x"}`}}}
	}
	s := llm.NewScripted(turns)
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
