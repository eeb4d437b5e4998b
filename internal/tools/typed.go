package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/strictjson"
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
func New[A any](name, description string, run func(context.Context, A) (string, error), refine ...Refine) (_ *Typed[A], err error) {
	s, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: derive schema: %w", name, err)
	}
	defer func() {
		// The path helpers (Len, OneOf, Range) panic on a path the type
		// does not have: a typo in a declaration, reported as an error.
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s: refine schema: %v", name, p)
		}
	}()
	for _, r := range refine {
		r(s)
	}
	resolved, err := resolveSchema(s)
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

// Must is New for tools whose declaration is fixed in the source (every
// built-in tool's constructor), where a failure is a bug caught by the
// first test that builds the tool.
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
// and runs the tool. The registry has validated already; a tool run
// directly (a test, a wrapper) gets the same check and the same errors.
func (t *Typed[A]) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := t.Decode(raw)
	if err != nil {
		return "", err
	}
	return t.run(ctx, a)
}

// Decode validates raw against the derived schema and decodes it strictly
// into A: Run's check, for a caller that wants the arguments themselves (a
// model's answer through a tool it was made to call).
func (t *Typed[A]) Decode(raw json.RawMessage) (A, error) {
	var a A
	if err := checkArgs(t.name, t.resolved, raw); err != nil {
		return a, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := strictjson.Decode(raw, &a); err != nil {
		return a, fmt.Errorf("%w for %s: %w", ErrInvalidArgs, t.name, err)
	}
	return a, nil
}

// Def is the tool as a model request lists it.
func (t *Typed[A]) Def() llm.Tool {
	return llm.Tool{Name: t.name, Description: t.description, Parameters: t.params}
}

// resolvedSchema lets the registry reuse the schema resolved in New.
func (t *Typed[A]) resolvedSchema() *jsonschema.Resolved { return t.resolved }

// Len bounds the string at path (min/maxLength, in characters) or, for an
// array, its item count; 0 leaves that side unbounded. A path names
// properties with dots and array items with []: "questions[].header".
func Len(path string, min, max int) Refine {
	return func(root *jsonschema.Schema) {
		s := At(root, path)
		isArray := s.Type == "array" || slices.Contains(s.Types, "array")
		set := func(p **int, v int) {
			if v > 0 {
				*p = &v
			}
		}
		if isArray {
			set(&s.MinItems, min)
			set(&s.MaxItems, max)
			return
		}
		set(&s.MinLength, min)
		set(&s.MaxLength, max)
	}
}

// OneOf restricts the value at path to values (a JSON Schema enum).
func OneOf(path string, values ...any) Refine {
	return func(root *jsonschema.Schema) { At(root, path).Enum = values }
}

// Range bounds the number at path, inclusive.
func Range(path string, min, max float64) Refine {
	return func(root *jsonschema.Schema) {
		s := At(root, path)
		s.Minimum, s.Maximum = &min, &max
	}
}

// At returns the schema at path (see Len) for refinements the helpers do
// not cover; it panics on a path the schema does not have, which New
// reports as the tool's build error.
func At(root *jsonschema.Schema, path string) *jsonschema.Schema {
	s := root
	for _, seg := range strings.Split(path, ".") {
		name, _, _ := strings.Cut(seg, "[]")
		if s = s.Properties[name]; s == nil {
			panic(fmt.Sprintf("no property %q in %q", name, path))
		}
		for range strings.Count(seg, "[]") {
			if s = s.Items; s == nil {
				panic(fmt.Sprintf("%q is not an array in %q", name, path))
			}
		}
	}
	return s
}
