package openai

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/raven-agent/raven/internal/llm"
)

func (p *Provider) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	msgs, err := toMessages(req.Messages)
	if err != nil {
		return params, err
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, toTool(t))
	}
	if len(req.Tools) > 0 {
		params.ToolChoice = toToolChoice(req.ToolChoice)
	}
	if req.MaxTokens > 0 {
		if p.completionTokens {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	// reasoning_effort goes only to OpenAI's own reasoning models: sending
	// it to any other model is an error on several servers.
	if req.NoReasoning && p.completionTokens {
		if e := lowestEffort(model); e != "" {
			params.ReasoningEffort = e
		}
	}
	return params, nil
}

// lowestEffort is the least reasoning each OpenAI reasoning family accepts
// ("" for a model that does not reason): gpt-5.1 and later can turn it
// off, gpt-5 goes down to minimal, the o-series to low.
func lowestEffort(model string) shared.ReasoningEffort {
	switch {
	case strings.HasPrefix(model, "gpt-5."):
		return shared.ReasoningEffortNone
	case model == "gpt-5" || strings.HasPrefix(model, "gpt-5-"):
		return shared.ReasoningEffortMinimal
	case len(model) >= 2 && model[0] == 'o' && model[1] >= '1' && model[1] <= '9':
		return shared.ReasoningEffortLow
	}
	return ""
}

func toMessages(in []llm.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(in))
	for i, m := range in {
		switch m.Role {
		case llm.RoleSystem:
			out = append(out, oai.SystemMessage(m.Content))
		case llm.RoleUser:
			out = append(out, oai.UserMessage(m.Content))
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result without tool_call_id", i)
			}
			out = append(out, oai.ToolMessage(m.Content, m.ToolCallID))
		case llm.RoleAssistant:
			var a oai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
					},
				})
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func toTool(t llm.Tool) oai.ChatCompletionToolUnionParam {
	params := t.Parameters
	if params == nil {
		// Some OpenAI-compatible servers reject a function without a schema.
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
	if t.Description != "" {
		def.Description = param.NewOpt(t.Description)
	}
	return oai.ChatCompletionFunctionTool(def)
}

func toToolChoice(c llm.ToolChoice) oai.ChatCompletionToolChoiceOptionUnionParam {
	switch c {
	case "", "auto", "required", "none":
		if c == "" {
			c = "auto"
		}
		return oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(string(c))}
	default:
		return oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: string(c)})
	}
}

func fromCompletion(c *oai.ChatCompletion) (*llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, errors.New("completion has no choices")
	}
	ch := c.Choices[0]
	resp := &llm.Response{
		Content:      ch.Message.Content,
		FinishReason: ch.FinishReason,
		Usage:        usageFrom(c.Usage),
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom (free-form) tools are never declared by Raven
		}
		id := tc.ID
		if id == "" {
			// Some local servers omit IDs; the agent needs one to link results.
			id = "call_" + strconv.Itoa(i+1)
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return resp, nil
}

// usageFrom converts a completion's usage; prompt_tokens already includes
// the cached ones.
func usageFrom(u oai.CompletionUsage) llm.Usage {
	return llm.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens),
		CachedTokens: int(u.PromptTokensDetails.CachedTokens)}
}
