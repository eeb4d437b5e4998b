package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/raven-agent/raven/internal/strictjson"
)

// Turn is one scripted model reply.
type Turn struct {
	Content   string
	ToolCalls []ToolCall
	// Error, when set, makes the call fail with this text instead of replying,
	// to simulate a failing model.
	Error string
}

// Scripted is a Provider that replays fixed turns in order, for tests and
// `raven demo`. It is safe for concurrent use; each call consumes one turn.
type Scripted struct {
	source string
	turns  []Turn

	mu       sync.Mutex
	next     int
	requests []Request
}

// NewScripted returns a provider that replays turns. Tool calls without an ID
// get a deterministic one ("call_<turn>_<index>").
func NewScripted(turns []Turn) *Scripted {
	return newScripted("script", turns)
}

func newScripted(source string, turns []Turn) *Scripted {
	own := make([]Turn, len(turns))
	for i, t := range turns {
		calls := make([]ToolCall, len(t.ToolCalls))
		copy(calls, t.ToolCalls)
		for j := range calls {
			if calls[j].ID == "" {
				calls[j].ID = "call_" + strconv.Itoa(i+1) + "_" + strconv.Itoa(j+1)
			}
		}
		t.ToolCalls = calls
		own[i] = t
	}
	return &Scripted{source: source, turns: own}
}

// ScriptError reports an unusable script file.
type ScriptError struct {
	Path string
	Err  error
}

func (e *ScriptError) Error() string { return "llm: script " + e.Path + ": " + e.Err.Error() }
func (e *ScriptError) Unwrap() error { return e.Err }

// The on-disk shape; Turn stays free of JSON quirks for Go callers.
type scriptFile struct {
	Turns []scriptTurn `json:"turns"`
}

type scriptTurn struct {
	Content   string       `json:"content"`
	ToolCalls []scriptCall `json:"tool_calls"`
	Error     string       `json:"error"`
}

type scriptCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is an object (sent as its JSON text) or a string (sent
	// verbatim, so a script can feed the agent malformed JSON).
	Arguments json.RawMessage `json:"arguments"`
}

// LoadScripted reads a script file:
//
//	{"turns":[{"content":"...","tool_calls":[{"name":"read_file","arguments":{"path":"x"}}]}]}
//
// Unknown fields are rejected so that a typo cannot silently change a test.
func LoadScripted(path string) (*Scripted, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ScriptError{Path: path, Err: err}
	}
	turns, err := parseScript(data)
	if err != nil {
		return nil, &ScriptError{Path: path, Err: err}
	}
	return newScripted(path, turns), nil
}

func parseScript(data []byte) ([]Turn, error) {
	var f scriptFile
	if err := strictjson.Decode(data, &f); err != nil {
		if errors.Is(err, strictjson.ErrTrailingData) {
			return nil, fmt.Errorf("decode: unexpected data after the top-level object: %w", err)
		}
		return nil, fmt.Errorf("decode: %w", err)
	}
	if f.Turns == nil {
		return nil, errors.New(`missing "turns" array`)
	}
	turns := make([]Turn, len(f.Turns))
	for i, st := range f.Turns {
		t := Turn{Content: st.Content, Error: st.Error}
		for j, sc := range st.ToolCalls {
			if sc.Name == "" {
				return nil, fmt.Errorf("turn %d tool call %d: missing \"name\"", i+1, j+1)
			}
			args, err := scriptArgs(sc.Arguments)
			if err != nil {
				return nil, fmt.Errorf("turn %d tool call %d (%s): %w", i+1, j+1, sc.Name, err)
			}
			t.ToolCalls = append(t.ToolCalls, ToolCall{ID: sc.ID, Name: sc.Name, Arguments: args})
		}
		turns[i] = t
	}
	return turns, nil
}

func scriptArgs(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return "{}", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		return s, nil
	case raw[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		return buf.String(), nil
	default:
		return "", errors.New("arguments: must be an object or a string")
	}
}

// Name implements Provider.
func (s *Scripted) Name() string { return "scripted:" + s.source }

// Chat returns the next turn. A cancelled ctx consumes no turn.
func (s *Scripted) Chat(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: scripted %s: %w", s.source, err)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if s.next >= len(s.turns) {
		s.mu.Unlock()
		return nil, fmt.Errorf("llm: scripted %s: all %d turns used: %w", s.source, len(s.turns), ErrExhausted)
	}
	n := s.next
	s.next++
	s.mu.Unlock()

	t := &s.turns[n] // turns are never written after construction
	if t.Error != "" {
		return nil, fmt.Errorf("llm: scripted %s turn %d: %s", s.source, n+1, t.Error)
	}
	resp := &Response{Content: t.Content, FinishReason: "stop"}
	if len(t.ToolCalls) > 0 {
		// A copy, so a caller editing the response cannot change the script.
		resp.ToolCalls = append([]ToolCall(nil), t.ToolCalls...)
		resp.FinishReason = "tool_calls"
	}
	if req.OnDelta != nil {
		streamScripted(resp, req.OnDelta)
	}
	return resp, nil
}

// streamScripted plays a scripted turn as a stream: its text a word at a
// time, each tool call whole, so demos and tests show streaming without a
// server.
func streamScripted(resp *Response, onDelta func(Delta)) {
	for rest := resp.Content; rest != ""; {
		i := strings.IndexByte(rest, ' ') + 1
		if i == 0 {
			i = len(rest)
		}
		onDelta(Delta{Text: rest[:i]})
		rest = rest[i:]
	}
	for i, c := range resp.ToolCalls {
		onDelta(Delta{ToolCall: &ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
	}
}

// Remaining reports how many turns are left.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Requests returns a copy of every request received so far, in arrival
// order, so tests can assert on what the agent sent.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}
