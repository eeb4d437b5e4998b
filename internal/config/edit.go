package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// Get returns the value at a dotted key of cfg as a generic JSON value
// (bool, float64, string, []any, map[string]any). A section's key returns
// the section with every key in it, optional ones included.
func Get(cfg Config, key string) (any, error) {
	k, err := LookupKey(key)
	if err == nil {
		return generic(k.JSON(cfg)), nil
	}
	keys := Keys()
	if key == "" || len(childrenOf(keys, key)) == 0 {
		return nil, err
	}
	section := map[string]any{}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k.Name, key+".")
		if !ok {
			continue
		}
		node := section
		parts := strings.Split(rest, ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := node[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[p] = next
			}
			node = next
		}
		node[parts[len(parts)-1]] = generic(k.JSON(cfg))
	}
	return section, nil
}

func generic(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// Set changes one dotted key in the file at path, parsing value by the
// key's type (see ParseValue), validating the whole result, and writing
// atomically; nothing is written on error. Keys the owner did not set stay
// absent from the file so defaults can evolve.
func Set(path, key, value string) error {
	k, err := LookupKey(key)
	if err != nil {
		return err
	}
	raw, err := k.ParseValue(value)
	if err != nil {
		return err
	}
	return edit(path, k, func(node map[string]any, leaf string) { node[leaf] = raw })
}

// Unset removes one dotted key from the file at path, so its default
// applies again.
func Unset(path, key string) error {
	k, err := LookupKey(key)
	if err != nil {
		return err
	}
	return edit(path, k, func(node map[string]any, leaf string) { delete(node, leaf) })
}

// edit applies change to k's place in the file's JSON tree, then validates
// the whole result before writing it.
func edit(path string, k Key, change func(node map[string]any, leaf string)) error {
	if _, err := Load(path); err != nil {
		return err
	}
	file := map[string]any{}
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(bytes.TrimSpace(b)) > 0:
		// Load accepted the file, so it is one strict object; numbers stay
		// as written (a Telegram id must not pass through float64).
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&file); err != nil {
			return &Error{File: path, Msg: "malformed JSON: " + err.Error()}
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return &Error{File: path, Msg: err.Error()}
	}
	parts := strings.Split(k.Name, ".")
	node := file
	for _, p := range parts[:len(parts)-1] {
		next, ok := node[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[p] = next
		}
		node = next
	}
	change(node, parts[len(parts)-1])
	out, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("config: encode: %w", err)
	}
	check := Default()
	if err := decode(out, &check); err != nil {
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

// ParseValue parses the command-line text of a value for k into the JSON
// written to the file:
//
//   - bool, int, number, string: as written (a string is taken verbatim);
//   - duration: a Go duration ("90s", "30m", "1h30m");
//   - HH:MM: a time of day ("23:00");
//   - list of T: comma-separated items ("telegram:123,webhook:x"), a JSON
//     array (`["a,b","c"]`) when an item holds a comma, "" for an empty list;
//   - JSON (lists of objects, maps): the JSON text itself;
//   - an optional (pointer) value: its element's syntax, "null" to clear.
//
// A value that does not parse is an *Error naming the full dotted key.
func (k Key) ParseValue(value string) (json.RawMessage, error) {
	v, err := parseText(k.typ, value)
	if err != nil {
		return nil, &Error{Key: k.Name, Msg: err.Error()}
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, &Error{Key: k.Name, Msg: err.Error()}
	}
	return b, nil
}

func parseText(t reflect.Type, s string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	if name, _ := scalarName(t); name == "duration" {
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON([]byte(strconv.Quote(s))); err != nil {
			return v, fmt.Errorf("want a duration such as 90s, 30m or 1h30m, got %q", s)
		}
		return v, nil
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			return v, fmt.Errorf("want %s, got %q: %v", typeName(t), s, err)
		}
		return v, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		// An optional value: "null" clears it, anything else is the value.
		if strings.TrimSpace(s) == "null" {
			return v, nil
		}
		ev, err := parseText(t.Elem(), s)
		if err != nil {
			return v, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(ev)
		v.Set(p)
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return v, fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("want an integer, got %q", s)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("want a non-negative integer, got %q", s)
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), t.Bits())
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("want a number, got %q", s)
		}
		v.SetFloat(f)
	case reflect.Slice:
		trimmed := strings.TrimSpace(s)
		if strings.HasPrefix(trimmed, "[") || !isScalar(t.Elem()) {
			if err := strictjson.Decode([]byte(s), v.Addr().Interface()); err != nil {
				return v, fmt.Errorf("want a JSON %s: %v", jsonShape(t), err)
			}
			return v, nil
		}
		v.Set(reflect.MakeSlice(t, 0, 0))
		if trimmed == "" {
			return v, nil
		}
		for i, item := range strings.Split(s, ",") {
			ev, err := parseText(t.Elem(), strings.TrimSpace(item))
			if err != nil {
				return v, fmt.Errorf("item %d: %v", i+1, err)
			}
			v.Set(reflect.Append(v, ev))
		}
	default:
		if err := strictjson.Decode([]byte(s), v.Addr().Interface()); err != nil {
			return v, fmt.Errorf("want JSON: %v", err)
		}
	}
	return v, nil
}

func jsonShape(t reflect.Type) string {
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return "list of objects"
	}
	return typeName(t)
}
