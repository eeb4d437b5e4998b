package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Typed is a tool declared once, as its Go argument type A: the JSON Schema
// the model sees is derived from A (json tags name the fields, a
// `jsonschema:"..."` tag describes them, fields without omitempty are
// required, unknown fields are refused), and the same schema validates the
// model's arguments before they are decoded into A.
type Typed[A any] struct {
	name, description string
	params            map[string]any
	resolved          *jsonschema.Resolved
	run               func(context.Context, A) (string, error)
}

// Refine adjusts a derived schema where a Go type cannot say it: bounds,
// enums, patterns. It runs once, when the tool is built.
type Refine func(*jsonschema.Schema)

// New declares a tool whose arguments are A. It fails only on a programming
// error (a type jsonschema cannot describe, a refinement that breaks the
// schema), which the runtime's assembly reports at build time.
func New[A any](name, description string, run func(context.Context, A) (string, error), refine ...Refine) (*Typed[A], error) {
	s, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: derive schema: %w", name, err)
	}
	for _, r := range refine {
		r(s)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: resolve schema: %w", name, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tool %s: encode schema: %w", name, err)
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("tool %s: decode schema: %w", name, err)
	}
	return &Typed[A]{name: name, description: description, params: params, resolved: resolved, run: run}, nil
}

// Must is New for tools declared at package level from literals, where a
// failure is a bug caught by the first test that builds the tool.
func Must[A any](t *Typed[A], err error) *Typed[A] {
	if err != nil {
		panic(err)
	}
	return t
}

func (t *Typed[A]) Name() string               { return t.name }
func (t *Typed[A]) Description() string        { return t.description }
func (t *Typed[A]) Parameters() map[string]any { return t.params }

// Run validates raw against the derived schema, decodes it strictly into A
// and runs the tool.
func (t *Typed[A]) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return "", fmt.Errorf("arguments for %s are not valid JSON: %v", t.name, err)
	}
	if err := t.resolved.Validate(instance); err != nil {
		return "", fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	var a A
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	return t.run(ctx, a)
}
