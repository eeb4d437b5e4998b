package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/llmtest"
)

var sse = map[string]string{"Content-Type": "text/event-stream"}

// TestChatStreamsToolUse replays a recorded Messages stream (text, two
// tool_use blocks with input_json deltas, usage in message_start and
// message_delta): the deltas arrive in order and the accumulated response
// equals the one the same message gives whole.
func TestChatStreamsToolUse(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/message_tool_use.json"},
		llmtest.Step{File: "testdata/stream_tool_use.sse", Header: sse})
	p := newProvider(t, srv.URL)
	whole, err := p.Chat(context.Background(), llm.Request{Messages: hi()})
	if err != nil {
		t.Fatal(err)
	}
	var deltas []llm.Delta
	got, err := p.Chat(context.Background(), llm.Request{Messages: hi(), OnDelta: func(d llm.Delta) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	// The whole message's input JSON is compacted by the SDK decoder, the
	// streamed one is the model's text: compare them as JSON.
	for i := range got.ToolCalls {
		var g, w any
		_ = json.Unmarshal([]byte(got.ToolCalls[i].Arguments), &g)
		_ = json.Unmarshal([]byte(whole.ToolCalls[i].Arguments), &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("call %d args %s, whole %s", i, got.ToolCalls[i].Arguments, whole.ToolCalls[i].Arguments)
		}
		got.ToolCalls[i].Arguments = whole.ToolCalls[i].Arguments
	}
	if !reflect.DeepEqual(got, whole) {
		t.Fatalf("streamed %+v\n   whole %+v", got, whole)
	}
	if got.Usage != (llm.Usage{InputTokens: 412, OutputTokens: 96}) {
		t.Fatalf("usage = %+v", got.Usage)
	}
	var text strings.Builder
	var calls []string
	nText := 0
	for _, d := range deltas {
		if d.ToolCall == nil {
			nText++
			text.WriteString(d.Text)
			continue
		}
		if d.ToolCall.Name != "" {
			calls = append(calls, d.ToolCall.ID+" "+d.ToolCall.Name+" ")
		}
		calls[d.ToolCall.Index] += d.ToolCall.Arguments
	}
	if nText != 3 || text.String() != whole.Content {
		t.Fatalf("%d text deltas spelling %q", nText, text.String())
	}
	want := []string{`toolu_01A09q90qw90lq917835lq9 read_file {"path": "notes/today.md"}`,
		`toolu_01BvRzMk3fQe2sD9wWpA7nLx list_dir {"path": "notes", "recursive": false}`}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("tool deltas = %q", calls)
	}
	if b := body(t, srv.Requests()[1]); b["stream"] != true {
		t.Fatalf("streamed request body = %v", b)
	}
}

// TestChatStreamTruncated: a stream that ends without message_stop is a
// broken stream, not a short reply.
func TestChatStreamTruncated(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/stream_truncated.sse", Header: sse})
	p := newProvider(t, srv.URL)
	n := 0
	_, err := p.Chat(context.Background(), llm.Request{Messages: hi(), OnDelta: func(llm.Delta) { n++ }})
	if !errors.Is(err, llm.ErrStreamBroken) || n == 0 {
		t.Fatalf("err = %v after %d deltas", err, n)
	}
}

// TestChatStreamErrorStatus: an error status before the stream is the same
// typed, retryable APIError a whole call gets.
func TestChatStreamErrorStatus(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{Status: 529, File: "testdata/error_529.json"})
	p := newProvider(t, srv.URL)
	_, err := p.Chat(context.Background(), llm.Request{Messages: hi(), OnDelta: func(llm.Delta) { t.Error("delta from an error") }})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !apiErr.Retryable() {
		t.Fatalf("err = %v", err)
	}
}
