package openai

import (
	"context"
	"errors"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/raven-agent/raven/internal/llm"
)

// stream makes one streamed call: chunks go to onDelta as they arrive and
// the SDK's accumulator assembles the completion the caller gets back, so
// streamed and whole calls return the same Response.
func (p *Provider) stream(ctx, callCtx context.Context, params oai.ChatCompletionNewParams, onDelta func(llm.Delta)) (*llm.Response, error) {
	// Without include_usage the stream carries no token counts at all.
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	var httpRes *http.Response
	s := p.client.Chat.Completions.NewStreaming(callCtx, params, option.WithResponseInto(&httpRes))
	defer s.Close()
	var acc oai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			return nil, llm.StreamError(ctx, p.label, p.endpoint, errors.New("chunk out of order or out of bounds"))
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // Raven asks for one choice
			}
			if ch.Delta.Content != "" {
				onDelta(llm.Delta{Text: ch.Delta.Content})
			}
			for _, tc := range ch.Delta.ToolCalls {
				idx := int(tc.Index)
				if idx < 0 {
					idx = 0 // some servers send -1 for a lone call, as the accumulator allows
				}
				onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
			}
		}
	}
	if err := s.Err(); err != nil {
		if httpRes == nil || httpRes.StatusCode >= 400 {
			var sdkErr *oai.Error
			detail := ""
			if errors.As(err, &sdkErr) {
				detail = sdkErr.Message
			}
			return nil, llm.CallError(ctx, p.label, p.endpoint, httpRes, err, detail)
		}
		return nil, llm.StreamError(ctx, p.label, p.endpoint, err)
	}
	if len(acc.Choices) == 0 {
		return nil, llm.StreamError(ctx, p.label, p.endpoint, errors.New("stream ended without a choice"))
	}
	if acc.Choices[0].FinishReason == "" {
		// A stream cut short by the server still ends "cleanly" for the
		// decoder; a completion always says why it stopped.
		return nil, llm.StreamError(ctx, p.label, p.endpoint, errors.New("no finish_reason"))
	}
	return fromCompletion(&acc.ChatCompletion)
}
