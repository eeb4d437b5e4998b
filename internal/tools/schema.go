package tools

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Validate checks a decoded JSON value against the subset of JSON Schema the
// tools use: type, properties, required, additionalProperties=false, enum,
// items, minLength/maxLength, minimum/maximum, minItems/maxItems.
func Validate(schema map[string]any, v any) error {
	return validate(schema, v, "")
}

func validate(s map[string]any, v any, path string) error {
	name := path
	if name == "" {
		name = "arguments"
	}
	if typ, ok := s["type"].(string); ok {
		if err := checkType(typ, v, name); err != nil {
			return err
		}
	}
	if enum := anySlice(s["enum"]); enum != nil {
		found := false
		for _, e := range enum {
			if e == v {
				found = true
				break
			}
		}
		if !found {
			opts := make([]string, len(enum))
			for i, e := range enum {
				opts[i] = fmt.Sprint(e)
			}
			return fmt.Errorf("%s must be one of %s", name, strings.Join(opts, ", "))
		}
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if m, ok := num(s["maxLength"]); ok && float64(n) > m {
			return fmt.Errorf("%s is longer than %v characters", name, m)
		}
		if m, ok := num(s["minLength"]); ok && float64(n) < m {
			return fmt.Errorf("%s is shorter than %v characters", name, m)
		}
	case float64:
		if m, ok := num(s["maximum"]); ok && x > m {
			return fmt.Errorf("%s must be at most %v", name, m)
		}
		if m, ok := num(s["minimum"]); ok && x < m {
			return fmt.Errorf("%s must be at least %v", name, m)
		}
	case []any:
		if m, ok := num(s["maxItems"]); ok && float64(len(x)) > m {
			return fmt.Errorf("%s has more than %v items", name, m)
		}
		if m, ok := num(s["minItems"]); ok && float64(len(x)) < m {
			return fmt.Errorf("%s has fewer than %v items", name, m)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validate(items, e, fmt.Sprintf("%s[%d]", name, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range required(s["required"]) {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("missing required field %q", join(path, r))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if ap, set := s["additionalProperties"].(bool); set && !ap {
					return fmt.Errorf("unknown field %q", join(path, k))
				}
				continue
			}
			if err := validate(ps, x[k], join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkType(typ string, v any, name string) error {
	ok := false
	switch typ {
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "number":
		_, ok = v.(float64)
	case "integer":
		f, isNum := v.(float64)
		ok = isNum && f == math.Trunc(f)
	case "null":
		ok = v == nil
	default:
		ok = true
	}
	if !ok {
		return fmt.Errorf("%s must be of type %s, got %s", name, typ, jsonType(v))
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func required(v any) []string {
	switch r := v.(type) {
	case []string:
		return r
	case []any:
		out := make([]string, 0, len(r))
		for _, x := range r {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func anySlice(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return nil
}
