package anthropic

import (
	"context"
	"errors"
	"net/http"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/raven-agent/raven/internal/llm"
)

// stream makes one streamed Messages call: text and input_json deltas go to
// onDelta as they arrive, and the SDK's Message.Accumulate assembles the
// message the caller gets back, so streamed and whole calls return the same
// Response.
func (p *Provider) stream(ctx, callCtx context.Context, params anth.MessageNewParams, opts []option.RequestOption, onDelta func(llm.Delta)) (*llm.Response, error) {
	var httpRes *http.Response
	opts = append(opts, option.WithResponseInto(&httpRes))
	s := p.client.Messages.NewStreaming(callCtx, params, opts...)
	defer s.Close()
	var msg anth.Message
	// Content blocks are numbered across text and tool_use; llm numbers
	// tool calls among themselves.
	toolIndex := map[int64]int{}
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, llm.StreamError(ctx, "anthropic", p.endpoint, err)
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				n := len(toolIndex)
				toolIndex[ev.Index] = n
				onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: n, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(llm.Delta{Text: ev.Delta.Text})
				}
			case "input_json_delta":
				if n, ok := toolIndex[ev.Index]; ok && ev.Delta.PartialJSON != "" {
					onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: n, Arguments: ev.Delta.PartialJSON}})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		if httpRes == nil || httpRes.StatusCode >= 400 {
			var sdkErr *anth.Error
			detail := ""
			if errors.As(err, &sdkErr) {
				detail = sdkErr.Message
			}
			return nil, llm.CallError(ctx, "anthropic", p.endpoint, httpRes, err, detail)
		}
		return nil, llm.StreamError(ctx, "anthropic", p.endpoint, err)
	}
	if !stopped {
		return nil, llm.StreamError(ctx, "anthropic", p.endpoint, errors.New("no message_stop"))
	}
	return fromMessage(&msg)
}
