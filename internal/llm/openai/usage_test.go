package openai_test

import (
	"context"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/llmtest"
)

// A prompt served partly from OpenAI's cache reports the cached part
// (prompt_tokens_details.cached_tokens) inside the input it already counts.
func TestChatUsageCachedTokens(t *testing.T) {
	srv := llmtest.NewReplay(t, llmtest.Step{File: "testdata/chat_cached.json"})
	resp, err := newProvider(t, srv.URL).Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (llm.Usage{InputTokens: 2070, OutputTokens: 17, CachedTokens: 1920}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}
