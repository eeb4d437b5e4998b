package fakeopenai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// TestStreamingThroughTheSDK streams replies from the fake through Raven's
// OpenAI provider (openai-go's NewStreaming and accumulator): the deltas
// arrive in several pieces and the assembled response equals the one the
// same reply gives without streaming, usage included.
func TestStreamingThroughTheSDK(t *testing.T) {
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hello there"}}
	tests := []struct {
		name       string
		reply      fakeopenai.Reply
		wantText   int // minimum text deltas
		wantToolDs int // minimum tool-call deltas
	}{
		{"text", fakeopenai.Text("the quick brown fox jumps"), 5, 0},
		{"tool calls", fakeopenai.Reply{Text: "checking. ", ToolCalls: []fakeopenai.ToolCall{
			{Name: "web_fetch", Arguments: `{"url":"http://example.test/a-long-path"}`},
			{Name: "read_file", Arguments: `{"path":"notes.md"}`}}}, 1, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeopenai.Start(t, fakeopenai.Options{})
			p := provider(t, s)
			s.Enqueue(tc.reply, tc.reply)
			whole, err := p.Chat(context.Background(), llm.Request{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			var deltas []llm.Delta
			got, err := p.Chat(context.Background(), llm.Request{Messages: msgs, OnDelta: func(d llm.Delta) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			// The ids are numbered per request; everything else must match.
			for i := range got.ToolCalls {
				got.ToolCalls[i].ID = whole.ToolCalls[i].ID
			}
			if g, w := mustJSON(got), mustJSON(whole); g != w {
				t.Fatalf("streamed response %s\n           whole %s", g, w)
			}
			if got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 {
				t.Fatalf("usage not streamed: %+v", got.Usage)
			}
			var text strings.Builder
			args := map[int]string{}
			names := map[int]string{}
			nText, nTool := 0, 0
			for _, d := range deltas {
				if d.ToolCall != nil {
					nTool++
					args[d.ToolCall.Index] += d.ToolCall.Arguments
					names[d.ToolCall.Index] += d.ToolCall.Name
					continue
				}
				nText++
				text.WriteString(d.Text)
			}
			if nText < tc.wantText || nTool < tc.wantToolDs {
				t.Fatalf("%d text and %d tool deltas, want at least %d and %d", nText, nTool, tc.wantText, tc.wantToolDs)
			}
			if text.String() != tc.reply.Text {
				t.Fatalf("deltas spell %q, want %q", text.String(), tc.reply.Text)
			}
			for i, c := range tc.reply.ToolCalls {
				if args[i] != c.Arguments || names[i] != c.Name {
					t.Fatalf("call %d deltas = %s %s, want %s %s", i, names[i], args[i], c.Name, c.Arguments)
				}
			}
			reqs := s.Requests()
			if !reqs[1].Stream || !strings.Contains(string(reqs[1].Body), `"include_usage":true`) {
				t.Fatalf("streamed request body = %s", reqs[1].Body)
			}
		})
	}
}

// TestStreamHoldShowsPartialReply: with Hold, the first words arrive while
// the rest of the reply is still held.
func TestStreamHoldShowsPartialReply(t *testing.T) {
	s := fakeopenai.Start(t, fakeopenai.Options{})
	p := provider(t, s)
	hold := make(chan struct{})
	s.Enqueue(fakeopenai.Reply{Text: "first then the rest", Hold: hold})
	first := make(chan string, 16)
	done := make(chan *llm.Response, 1)
	go func() {
		r, _ := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
			OnDelta: func(d llm.Delta) { first <- d.Text }})
		done <- r
	}()
	if got := <-first; got != "first " {
		t.Fatalf("first delta = %q", got)
	}
	select {
	case <-done:
		t.Fatal("reply completed while held")
	default:
	}
	close(hold)
	if r := <-done; r == nil || r.Content != "first then the rest" {
		t.Fatalf("reply = %+v", r)
	}
}

// TestStreamRetriedOnlyBeforeFirstDelta: a 500 before the stream starts is
// retried by WithRetry and the retried stream reaches the caller.
func TestStreamRetriedOnlyBeforeFirstDelta(t *testing.T) {
	s := fakeopenai.Start(t, fakeopenai.Options{})
	fc := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	p := llm.WithRetry(provider(t, s), llm.RetryConfig{Clock: fc, Jitter: func() float64 { return 0 }})
	s.Enqueue(fakeopenai.Error(500, "overloaded"), fakeopenai.Text("second try"))
	type res struct {
		r   *llm.Response
		err error
	}
	out := make(chan res, 1)
	var text strings.Builder
	go func() {
		r, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}},
			OnDelta: func(d llm.Delta) { text.WriteString(d.Text) }})
		out <- res{r, err}
	}()
	fc.BlockUntil(1)
	fc.Advance(time.Second)
	got := <-out
	if got.err != nil || got.r.Content != "second try" || text.String() != "second try" {
		t.Fatalf("retried stream = %+v %v, deltas %q", got.r, got.err, text.String())
	}
	if errors.Is(got.err, llm.ErrStreamStarted) {
		t.Fatal("unexpected")
	}
}
