package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/raven-agent/raven/internal/llm"
)

func (p *Provider) params(req llm.Request) (anth.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := anth.MessageNewParams{Model: anth.Model(model), MaxTokens: int64(maxTokens)}
	msgs, system, err := toMessages(req.Messages)
	if err != nil {
		return params, err
	}
	params.Messages, params.System = msgs, system
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, toTool(t))
	}
	if len(req.Tools) > 0 {
		params.ToolChoice = toToolChoice(req.ToolChoice)
	}
	// What a model does when thinking is omitted depends on the model, so
	// "no reasoning" says so explicitly.
	if req.NoReasoning {
		params.Thinking = anth.ThinkingConfigParamUnion{OfDisabled: &anth.ThinkingConfigDisabledParam{}}
	}
	return params, nil
}

// turn accumulates the blocks of one Anthropic message. The API wants roles
// to alternate, so consecutive messages of one role (several tool results,
// or tool results followed by a user note) merge into one turn; tool_result
// blocks go first, as the API requires after a tool_use turn.
type turn struct {
	user    bool
	results []anth.ContentBlockParamUnion
	blocks  []anth.ContentBlockParamUnion
}

func toMessages(in []llm.Message) ([]anth.MessageParam, []anth.TextBlockParam, error) {
	var (
		system []anth.TextBlockParam
		turns  []*turn
	)
	current := func(user bool) *turn {
		if n := len(turns); n > 0 && turns[n-1].user == user {
			return turns[n-1]
		}
		t := &turn{user: user}
		turns = append(turns, t)
		return t
	}
	for i, m := range in {
		switch m.Role {
		case llm.RoleSystem:
			// The Messages API takes the system prompt apart from the turns.
			if m.Content != "" {
				system = append(system, anth.TextBlockParam{Text: m.Content})
			}
		case llm.RoleUser:
			// The API rejects empty text blocks.
			if m.Content != "" {
				t := current(true)
				t.blocks = append(t.blocks, anth.NewTextBlock(m.Content))
			}
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: tool result without tool_call_id", i)
			}
			r := anth.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				r.Content = []anth.ToolResultBlockParamContentUnion{{OfText: &anth.TextBlockParam{Text: m.Content}}}
			}
			t := current(true)
			t.results = append(t.results, anth.ContentBlockParamUnion{OfToolResult: &r})
		case llm.RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue
			}
			t := current(false)
			if m.Content != "" {
				t.blocks = append(t.blocks, anth.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				t.blocks = append(t.blocks, anth.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	out := make([]anth.MessageParam, 0, len(turns))
	for _, t := range turns {
		blocks := append(t.results, t.blocks...)
		if t.user {
			out = append(out, anth.NewUserMessage(blocks...))
		} else {
			out = append(out, anth.NewAssistantMessage(blocks...))
		}
	}
	return out, system, nil
}

// toolInput turns recorded argument text back into the object the API wants.
// Arguments that are not a JSON object (a model's malformed output, kept in
// history) become {} so that one bad turn cannot make every later call fail.
func toolInput(args string) any {
	b := bytes.TrimSpace([]byte(args))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(b)
	}
	return map[string]any{}
}

func toTool(t llm.Tool) anth.ToolUnionParam {
	var schema anth.ToolInputSchemaParam
	extra := map[string]any{}
	for k, v := range t.Parameters {
		switch k {
		case "type": // always "object", set by the SDK
		case "properties":
			schema.Properties = v
		case "required":
			if req, ok := stringList(v); ok {
				schema.Required = req
			} else {
				extra[k] = v
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		schema.ExtraFields = extra
	}
	tool := anth.ToolUnionParamOfTool(schema, t.Name)
	if t.Description != "" {
		tool.OfTool.Description = anth.String(t.Description)
	}
	return tool
}

// stringList accepts both []string (schemas built in Go) and []any (decoded JSON).
func stringList(v any) ([]string, bool) {
	switch s := v.(type) {
	case []string:
		return s, true
	case []any:
		out := make([]string, 0, len(s))
		for _, x := range s {
			str, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, str)
		}
		return out, true
	}
	return nil, false
}

func toToolChoice(c llm.ToolChoice) anth.ToolChoiceUnionParam {
	switch c {
	case "", "auto":
		return anth.ToolChoiceUnionParam{OfAuto: &anth.ToolChoiceAutoParam{}}
	case "required":
		return anth.ToolChoiceUnionParam{OfAny: &anth.ToolChoiceAnyParam{}}
	case "none":
		return anth.ToolChoiceUnionParam{OfNone: &anth.ToolChoiceNoneParam{}}
	default:
		return anth.ToolChoiceParamOfTool(string(c))
	}
}

func fromMessage(m *anth.Message) (*llm.Response, error) {
	if m == nil || (len(m.Content) == 0 && m.StopReason == "") {
		return nil, errors.New("message has no content and no stop_reason")
	}
	resp := &llm.Response{
		FinishReason: string(m.StopReason),
		Usage:        usageFrom(m.Usage),
	}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(bytes.TrimSpace(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
		// Thinking and server-tool blocks carry nothing Raven acts on.
	}
	resp.Content = text.String()
	return resp, nil
}

// usageFrom converts a message's usage. Anthropic's input_tokens leaves out
// the tokens read from and written to the cache; llm.Usage counts them in.
func usageFrom(u anth.Usage) llm.Usage {
	read, write := int(u.CacheReadInputTokens), int(u.CacheCreationInputTokens)
	return llm.Usage{InputTokens: int(u.InputTokens) + read + write, OutputTokens: int(u.OutputTokens),
		CachedTokens: read, CacheWriteTokens: write}
}
