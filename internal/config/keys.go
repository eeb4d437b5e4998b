package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// Key is one settable leaf of the schema. The set of keys is derived from
// Config's json tags, so a field added to any section is reachable by
// `raven config get|set|list` without a second list to keep in step.
type Key struct {
	// Name is the dotted key ("channels.webhook.listen").
	Name string
	// Type says what `config set` accepts: bool, int, number, string,
	// duration, HH:MM, "list of T" (comma-separated or a JSON array) or
	// "JSON" for lists of objects and maps.
	Type string
	// Secret keys (API keys, tokens) are masked by `config list`.
	Secret bool

	index []int
	typ   reflect.Type
	// entry and sub locate a key inside one entry of a map of sections
	// (mcp.servers.NAME.command): the map's key, and the field's index in
	// the entry ("" and nil for every other key). See entryKey.
	entry string
	sub   []int
}

// scalarName names the leaf types whose Go kind says too little.
func scalarName(t reflect.Type) (string, bool) {
	switch t {
	case reflect.TypeFor[Duration](), reflect.TypeFor[policy.Duration]():
		return "duration", true
	case reflect.TypeFor[policy.TimeOfDay]():
		return "HH:MM", true
	}
	return "", false
}

// Keys lists every key of the schema in file order.
func Keys() []Key {
	var out []Key
	collect(reflect.TypeFor[Config](), "", nil, &out)
	return out
}

func collect(t reflect.Type, prefix string, index []int, out *[]Key) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		idx := append(append([]int(nil), index...), i)
		if isSection(sf.Type) {
			collect(sf.Type, key, idx, out)
			continue
		}
		*out = append(*out, Key{Name: key, Type: typeName(sf.Type), Secret: sf.Tag.Get("config") == "secret", index: idx, typ: sf.Type})
	}
}

// isSection reports whether t is a struct whose fields are keys of their
// own, rather than a value decoded as a whole.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !hasDecoder(t)
}

func hasDecoder(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

func typeName(t reflect.Type) string {
	if n, ok := scalarName(t); ok {
		return n
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice, reflect.Array:
		if isScalar(t.Elem()) {
			return "list of " + typeName(t.Elem())
		}
	}
	return "JSON"
}

// isScalar reports whether a value of t can be written as one word on the
// command line (an element of a comma-separated list).
func isScalar(t reflect.Type) bool {
	if _, ok := scalarName(t); ok {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// LookupKey returns the key named name. An unknown name is an *Error naming
// it and the keys known at the deepest section it reached; a section is an
// *Error listing its keys.
func LookupKey(name string) (Key, error) {
	keys := Keys()
	for _, k := range keys {
		if k.Name == name {
			return k, nil
		}
	}
	if k, ok, err := entryKey(keys, name); ok {
		return k, err
	}
	if name == "" {
		return Key{}, &Error{Msg: "empty key (known: " + strings.Join(childrenOf(keys, ""), ", ") + ")"}
	}
	if under := childrenOf(keys, name); len(under) > 0 {
		return Key{}, &Error{Key: name, Msg: "is a section; use one of its keys: " + strings.Join(under, ", ")}
	}
	prefix := name
	for {
		i := strings.LastIndexByte(prefix, '.')
		if i < 0 {
			prefix = ""
			break
		}
		prefix = prefix[:i]
		if len(childrenOf(keys, prefix)) > 0 {
			break
		}
	}
	return Key{}, &Error{Key: name, Msg: "unknown key (known here: " + strings.Join(childrenOf(keys, prefix), ", ") + ")"}
}

// childrenOf lists the direct children (keys or sections) of section
// prefix; "" is the root.
func childrenOf(keys []Key, prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		rest := k.Name
		if prefix != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(k.Name, prefix+"."); !ok {
				continue
			}
		}
		child, _, _ := strings.Cut(rest, ".")
		if !seen[child] {
			seen[child] = true
			out = append(out, child)
		}
	}
	sort.Strings(out)
	return out
}

// value returns the key's field in cfg (for a map entry's key, a copy:
// the zero value when the entry does not exist).
func (k Key) value(cfg *Config) reflect.Value {
	v := reflect.ValueOf(cfg).Elem().FieldByIndex(k.index)
	if k.entry == "" {
		return v
	}
	e := v.MapIndex(reflect.ValueOf(k.entry))
	if !e.IsValid() {
		e = reflect.Zero(v.Type().Elem())
	}
	if k.sub != nil {
		return e.FieldByIndex(k.sub)
	}
	return e
}

// entryKey resolves a name inside a map of sections, a key no schema walk
// can list because the entries are the owner's (mcp.servers.NAME, or
// mcp.servers.NAME.command): the entry as a whole is JSON, its fields have
// their own types. ok is false when name is not under such a map.
func entryKey(keys []Key, name string) (Key, bool, error) {
	for _, m := range keys {
		rest, found := strings.CutPrefix(name, m.Name+".")
		t := m.typ
		if !found || t.Kind() != reflect.Map || t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.Struct {
			continue
		}
		entry, field, _ := strings.Cut(rest, ".")
		if entry == "" {
			return Key{}, true, &Error{Key: name, Msg: "empty entry name"}
		}
		k := Key{Name: name, Type: "JSON", Secret: m.Secret, index: m.index, typ: t.Elem(), entry: entry}
		if field == "" {
			return k, true, nil
		}
		var fields []Key
		collect(t.Elem(), "", nil, &fields)
		known := make([]string, 0, len(fields))
		for _, f := range fields {
			if f.Name == field {
				k.Type, k.Secret, k.typ, k.sub = f.Type, f.Secret, f.typ, f.index
				return k, true, nil
			}
			known = append(known, f.Name)
		}
		return Key{}, true, &Error{Key: name, Msg: "unknown key (known here: " + strings.Join(known, ", ") + ")"}
	}
	return Key{}, false, nil
}

// JSON returns the key's value in cfg as JSON; an absent list is [], an
// absent map entry null.
func (k Key) JSON(cfg Config) json.RawMessage {
	if k.entry != "" && k.sub == nil && !reflect.ValueOf(cfg).FieldByIndex(k.index).MapIndex(reflect.ValueOf(k.entry)).IsValid() {
		return json.RawMessage("null")
	}
	v := k.value(&cfg)
	if v.Kind() == reflect.Slice && v.IsNil() {
		return json.RawMessage("[]")
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		// Every leaf type of the schema marshals; reaching this is a bug in
		// a field's marshaler, shown rather than hidden.
		return json.RawMessage(fmt.Sprintf("%q", "unprintable: "+err.Error()))
	}
	return b
}

// Text returns the key's value in cfg as `config set` accepts it back:
// strings, durations and times of day bare, everything else as JSON.
func (k Key) Text(cfg Config) string {
	raw := k.JSON(cfg)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Changed lists the keys whose values differ between a and b, in schema
// order: what a reload changed, for a gateway deciding what it can apply
// live and what needs a restart.
func Changed(a, b Config) []string {
	var out []string
	for _, k := range Keys() {
		// Compared as written to the file, so an absent list and [] agree.
		if !bytes.Equal(k.JSON(a), k.JSON(b)) {
			out = append(out, k.Name)
		}
	}
	return out
}
