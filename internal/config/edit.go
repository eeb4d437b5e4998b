package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/statefile"
)

// asMap renders cfg as a generic JSON tree, the shape dotted keys address.
func asMap(cfg Config) map[string]any {
	b, _ := json.Marshal(cfg)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// Get returns the value at a dotted key (sentinel.enabled) of cfg.
func Get(cfg Config, key string) (any, error) {
	var cur any = asMap(cfg)
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, &Error{Key: key, Msg: "not a section"}
		}
		cur, ok = m[part]
		if !ok {
			return nil, &Error{Key: key, Msg: "unknown key" + suggest(m)}
		}
	}
	return cur, nil
}

func suggest(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return " (known here: " + strings.Join(keys, ", ") + ")"
}

// Set changes one dotted key in the file at path, parsing value by the
// key's type, validating the whole result, and writing atomically. Keys the
// owner did not set stay absent from the file so defaults can evolve.
func Set(path, key, value string) error {
	cur, err := Load(path)
	if err != nil {
		return err
	}
	old, err := Get(cur, key)
	if err != nil {
		return err
	}
	if _, isSection := old.(map[string]any); isSection {
		return &Error{Key: key, Msg: "is a section; set one of its keys"}
	}
	parsed, err := parseAs(old, value, key)
	if err != nil {
		return err
	}
	file := map[string]any{}
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &file); err != nil {
			return &Error{File: path, Msg: "malformed JSON: " + err.Error()}
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &Error{File: path, Msg: err.Error()}
	}
	parts := strings.Split(key, ".")
	node := file
	for _, p := range parts[:len(parts)-1] {
		next, ok := node[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[p] = next
		}
		node = next
	}
	node[parts[len(parts)-1]] = parsed
	out, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("config: encode: %w", err)
	}
	check := Default()
	if err := decodeStrict(out, &check); err != nil {
		return withFile(err, path)
	}
	if err := check.Validate(); err != nil {
		return withFile(err, path)
	}
	return statefile.WriteAtomic(path, append(out, '\n'), 0o600)
}

func withFile(err error, path string) error {
	var ce *Error
	if errors.As(err, &ce) {
		ce.File = path
	}
	return err
}

// parseAs parses value into the JSON type of old.
func parseAs(old any, value, key string) (any, error) {
	switch o := old.(type) {
	case bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, &Error{Key: key, Msg: fmt.Sprintf("want true or false, got %q", value)}
		}
		return b, nil
	case float64:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, &Error{Key: key, Msg: fmt.Sprintf("want a number, got %q", value)}
		}
		return f, nil
	case string:
		if _, err := time.ParseDuration(o); err == nil && o != "" {
			if _, err := time.ParseDuration(value); err != nil {
				return nil, &Error{Key: key, Msg: fmt.Sprintf("want a duration such as 30m, got %q", value)}
			}
		}
		return value, nil
	case []any, nil:
		// Lists and optional values take JSON, or a comma-separated list.
		var v any
		if err := json.Unmarshal([]byte(value), &v); err == nil {
			return v, nil
		}
		if _, isList := old.([]any); isList || old == nil {
			if value == "" {
				return []any{}, nil
			}
			var items []any
			for _, s := range strings.Split(value, ",") {
				items = append(items, strings.TrimSpace(s))
			}
			return items, nil
		}
		return value, nil
	}
	return nil, &Error{Key: key, Msg: "cannot be set from the command line"}
}
