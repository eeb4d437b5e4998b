package anthropic_test

import (
	"context"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/llmtest"
)

// Anthropic's input_tokens leaves out cache reads and writes; Raven's
// input counts them, with the cached and written parts said apart.
func TestChatUsageCachedTokens(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/message_cached.json"})
	resp, err := newProvider(t, srv.URL).Chat(context.Background(), llm.Request{Messages: hi()})
	if err != nil {
		t.Fatal(err)
	}
	if want := (llm.Usage{InputTokens: 14 + 1800 + 250, OutputTokens: 21, CachedTokens: 1800, CacheWriteTokens: 250}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}
