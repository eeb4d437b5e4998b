package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// stream answers a "stream": true request the way OpenAI does: Server-Sent
// Events of chat.completion.chunk objects, the text a few words per chunk,
// each tool call's arguments in pieces, a usage chunk when the client asked
// for stream_options.include_usage, then [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply, n int) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	send := func(choices []map[string]any, extra map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000 + n, "model": req.Model, "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d map[string]any, finish any) []map[string]any {
		return []map[string]any{{"index": 0, "delta": d, "logprobs": nil, "finish_reason": finish}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	for i, piece := range TextChunks(reply.Text) {
		send(delta(map[string]any{"content": piece}, nil), nil)
		if i == 0 && reply.Hold != nil {
			select {
			case <-reply.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	for i, c := range reply.ToolCalls {
		send(delta(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": callID(c, n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil), nil)
		for _, piece := range argChunks(c.Arguments) {
			send(delta(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]any{"arguments": piece}}}}, nil), nil)
		}
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	send(delta(map[string]any{}, finish), nil)
	if includeUsage(req.Body) {
		send([]map[string]any{}, map[string]any{"usage": usage(req, reply)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// TextChunks is how a streamed reply's text is cut: a word (with the space
// after it) per chunk, so tests can count on "several chunks" for any
// reply of more than one word. Their concatenation is s.
func TextChunks(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// argChunks cuts tool-call arguments in about three pieces, never inside a
// UTF-8 sequence.
func argChunks(s string) []string {
	if s == "" {
		return nil
	}
	size := max(1, len(s)/3)
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && s[n]&0xC0 == 0x80 {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func includeUsage(body json.RawMessage) bool {
	var b struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	return json.Unmarshal(body, &b) == nil && b.StreamOptions.IncludeUsage
}
