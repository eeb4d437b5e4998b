package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

// mapTool is a tool whose schema is a map, as an MCP server sends it.
type mapTool struct {
	name, desc string
	params     map[string]any
	ran        int
}

func (m *mapTool) Name() string               { return m.name }
func (m *mapTool) Description() string        { return m.desc }
func (m *mapTool) Parameters() map[string]any { return m.params }
func (m *mapTool) Run(context.Context, json.RawMessage) (string, error) {
	m.ran++
	return "ran", nil
}

type noteArgs struct {
	Title string   `json:"title"`
	Kind  string   `json:"kind,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Stars int      `json:"stars,omitempty"`
}

// Every tool, typed or a schema map, is validated by the registry with the
// same library and the same errors.
func TestRegistryValidationErrors(t *testing.T) {
	typed, err := New("note", "take a note", func(context.Context, noteArgs) (string, error) { return "ran", nil },
		Len("title", 1, 10), OneOf("kind", "todo", "idea"), Len("tags", 0, 2), Len("tags[]", 0, 5), Range("stars", 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	var mcpSchema map[string]any
	json.Unmarshal([]byte(typedSchemaJSON(t, typed)), &mcpSchema)
	ext := &mapTool{name: "srv__note", params: mcpSchema}
	r := NewRegistry(typed)
	r.RegisterExternal(ext)
	cases := []struct {
		name, args, want string // want: substring of the error after "invalid arguments for TOOL: "
	}{
		{"valid", `{"title":"milk","kind":"todo","tags":["a"],"stars":3}`, ""},
		{"empty arguments are {}", ``, `required: missing properties: ["title"]`},
		{"missing required", `{"kind":"todo"}`, `required: missing properties: ["title"]`},
		{"unknown field", `{"title":"x","colour":"red"}`, `unexpected additional properties ["colour"]`},
		{"wrong type", `{"title":7}`, `title: type: 7 has type "integer", want "string"`},
		{"wrong type in an item", `{"title":"x","tags":[1]}`, `tags[]: type: 1 has type "integer", want "string"`},
		{"too long", `{"title":"far too long a title"}`, `title: maxLength: "far too long a title" contains 20 Unicode code points, more than 10`},
		{"too many items", `{"title":"x","tags":["a","b","c"]}`, `tags: maxItems: array length 3 is greater than 2`},
		{"enum", `{"title":"x","kind":"rant"}`, `kind: enum: rant does not equal any of: [todo idea]`},
		{"above maximum", `{"title":"x","stars":9}`, `stars: maximum: 9/1 is greater than 5`},
		{"not an object", `["x"]`, `type: [x] has type "array", want "object"`},
		{"not JSON", `{"title":`, `not valid JSON`},
	}
	for _, tool := range []string{"note", "srv__note"} {
		for _, c := range cases {
			t.Run(tool+"/"+c.name, func(t *testing.T) {
				out, err := r.Run(context.Background(), llm.ToolCall{Name: tool, Arguments: c.args})
				if c.want == "" {
					if err != nil || out != "ran" {
						t.Fatalf("got %q, %v", out, err)
					}
					return
				}
				prefix := "invalid arguments for " + tool + ": "
				if !errors.Is(err, ErrInvalidArgs) || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q%s", err, prefix, c.want)
				}
			})
		}
	}
	if ext.ran != 1 {
		t.Fatalf("the external tool ran %d times, want only for the valid call", ext.ran)
	}
	if err := r.CheckArgs("srv__note", json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("CheckArgs = %v", err)
	}
	if _, err := r.Run(context.Background(), llm.ToolCall{Name: "nope"}); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

// A schema that does not resolve fails that tool's calls with a clear
// error, on every call, and never a panic; the other tools still run.
func TestRegistryBadSchema(t *testing.T) {
	cases := map[string]map[string]any{
		"remote ref":     {"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "https://example.com/s.json"}}},
		"dangling ref":   {"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/missing"}}},
		"old draft":      {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
		"bad type value": {"type": 7},
	}
	for name, params := range cases {
		t.Run(name, func(t *testing.T) {
			bad := &mapTool{name: "srv__bad", params: params}
			ok := &mapTool{name: "srv__ok", params: map[string]any{"type": "object"}}
			r := NewRegistry()
			r.RegisterExternal(bad)
			r.RegisterExternal(ok)
			for range 2 {
				_, err := r.Run(context.Background(), llm.ToolCall{Name: "srv__bad", Arguments: `{}`})
				if !errors.Is(err, ErrBadSchema) || !strings.HasPrefix(err.Error(), "srv__bad: ") {
					t.Fatalf("err = %v, want ErrBadSchema naming the tool", err)
				}
			}
			if out, err := r.Run(context.Background(), llm.ToolCall{Name: "srv__ok"}); err != nil || out != "ran" || bad.ran != 0 {
				t.Fatalf("good tool: %q %v (bad ran %d)", out, err, bad.ran)
			}
		})
	}
}

// The cache follows replacement: a re-registered tool is validated by its
// new schema.
func TestRegistrySchemaCacheFollowsReplacement(t *testing.T) {
	r := NewRegistry()
	r.RegisterExternal(&mapTool{name: "srv__t", params: map[string]any{"type": "object", "required": []any{"a"}}})
	if _, err := r.Run(context.Background(), llm.ToolCall{Name: "srv__t", Arguments: `{}`}); !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("first schema not applied: %v", err)
	}
	r.RegisterExternal(&mapTool{name: "srv__t", params: map[string]any{"type": "object"}})
	if _, err := r.Run(context.Background(), llm.ToolCall{Name: "srv__t", Arguments: `{}`}); err != nil {
		t.Fatalf("stale schema: %v", err)
	}
}

func TestValidationMessageBounded(t *testing.T) {
	r := NewRegistry(NewWriteFile(nil))
	huge := strings.Repeat("x", maxFileArg+1)
	_, err := r.Run(context.Background(), llm.ToolCall{Name: WriteFileName, Arguments: `{"path":"a","content":"` + huge + `"}`})
	if !errors.Is(err, ErrInvalidArgs) || len(err.Error()) > maxDetail+100 || !strings.Contains(err.Error(), "content: maxLength") {
		t.Fatalf("err (%d bytes) = %.200s", len(err.Error()), err)
	}
}

func TestNewReportsABadRefinement(t *testing.T) {
	if _, err := New("x", "x", func(context.Context, noteArgs) (string, error) { return "", nil }, Len("titel", 1, 2)); err == nil ||
		!strings.Contains(err.Error(), `no property "titel"`) {
		t.Fatalf("err = %v", err)
	}
}

func typedSchemaJSON(t *testing.T, tool Tool) string {
	t.Helper()
	b, err := json.Marshal(tool.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
