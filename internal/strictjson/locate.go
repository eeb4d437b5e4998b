package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// locate walks data against the type of v, as encoding/json would decode
// it, and returns the first problem with its full path, or nil when it finds
// none (the caller then falls back to encoding/json's own error). It runs
// only after a failed decode, so the happy path pays nothing for it.
func locate(data []byte, v any) *Error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	w := &walker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	e, _ := w.value(t.Elem(), "")
	return e
}

type walker struct {
	data []byte
	dec  *json.Decoder
}

// startOf is the offset of the key or value that starts after off: the
// decoder's offset still points before the separating comma or colon.
func (w *walker) startOf(off int64) int64 {
	i := int(off)
	for i < len(w.data) && (w.data[i] == ',' || w.data[i] == ':' || w.data[i] == ' ' || w.data[i] == '\t' || w.data[i] == '\r' || w.data[i] == '\n') {
		i++
	}
	return int64(i)
}

// value checks the next value against t. The bool is false when the walk
// cannot go on (a syntax problem the real decoder reported already).
func (w *walker) value(t reflect.Type, path string) (*Error, bool) {
	for t.Kind() == reflect.Pointer && !implements(t) {
		t = t.Elem()
	}
	off := w.startOf(w.dec.InputOffset())
	if implements(t) {
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil {
			return nil, false
		}
		return w.custom(t, raw, path, off), true
	}
	tok, err := w.dec.Token()
	if err != nil {
		return nil, false
	}
	if tok == nil {
		return nil, true // null leaves any value alone
	}
	switch t.Kind() {
	case reflect.Interface:
		return w.skip(tok)
	case reflect.Struct:
		if tok != json.Delim('{') {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
		fields := fieldsOf(t)
		for w.dec.More() {
			koff := w.startOf(w.dec.InputOffset())
			kt, err := w.dec.Token()
			if err != nil {
				return nil, false
			}
			key, _ := kt.(string)
			f, ok := lookup(fields, key)
			if !ok {
				return &Error{Kind: ErrUnknownField, Field: join(path, key), Offset: koff, Detail: ErrUnknownField.Error()}, true
			}
			if e, ok := w.value(f.typ, join(path, key)); e != nil || !ok {
				return e, ok
			}
		}
		_, err := w.dec.Token()
		return nil, err == nil
	case reflect.Map:
		if tok != json.Delim('{') {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return nil, false
			}
			key, _ := kt.(string)
			if e, ok := w.value(t.Elem(), join(path, key)); e != nil || !ok {
				return e, ok
			}
		}
		_, err := w.dec.Token()
		return nil, err == nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if _, ok := tok.(string); !ok {
				return mismatch(t, tok, path, off), w.skipRest(tok)
			}
			return nil, true
		}
		if tok != json.Delim('[') {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
		for i := 0; w.dec.More(); i++ {
			if e, ok := w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]"); e != nil || !ok {
				return e, ok
			}
		}
		_, err := w.dec.Token()
		return nil, err == nil
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); !ok || err != nil {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := tok.(json.Number)
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); !ok || err != nil {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if _, err := strconv.ParseFloat(string(n), t.Bits()); !ok || err != nil {
			return mismatch(t, tok, path, off), w.skipRest(tok)
		}
	default:
		return w.skip(tok)
	}
	return nil, true
}

// custom runs a field type's own decoder on raw, as encoding/json would.
func (w *walker) custom(t reflect.Type, raw json.RawMessage, path string, off int64) *Error {
	if string(raw) == "null" {
		return nil
	}
	pv := reflect.New(t)
	var err error
	if u, ok := pv.Interface().(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(raw)
	} else if u, ok := pv.Interface().(encoding.TextUnmarshaler); ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return &Error{Kind: ErrType, Field: path, Offset: off, Detail: fmt.Sprintf("want a string (%s), got JSON %s", t, kindOf(raw))}
		}
		err = u.UnmarshalText([]byte(s))
	}
	if err != nil {
		return &Error{Kind: ErrValue, Field: path, Offset: off, Detail: err.Error(), Err: err}
	}
	return nil
}

// skip consumes the rest of a value whose first token was tok.
func (w *walker) skip(tok json.Token) (*Error, bool) { return nil, w.skipRest(tok) }

func (w *walker) skipRest(tok json.Token) bool {
	d, ok := tok.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return true
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return true
}

func implements(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	u, tu := reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()
	return t.Implements(u) || pt.Implements(u) || t.Implements(tu) || pt.Implements(tu)
}

func mismatch(t reflect.Type, tok json.Token, path string, off int64) *Error {
	return &Error{Kind: ErrType, Field: path, Offset: off, Detail: fmt.Sprintf("want %s, got JSON %s", t, tokenKind(tok))}
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "array"
		}
		return "object"
	case bool:
		return "bool"
	case json.Number:
		return "number " + string(v)
	case string:
		return "string"
	}
	return "null"
}

func kindOf(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return "value"
	}
	return tokenKind(tok)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

type field struct {
	name string
	typ  reflect.Type
}

// fieldsOf lists the JSON fields of struct type t the way encoding/json
// sees them: tagged names, "-" dropped, embedded structs promoted.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, fieldsOf(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, typ: sf.Type})
	}
	return out
}

// lookup matches a key exactly first, then case-insensitively, as
// encoding/json does.
func lookup(fields []field, key string) (field, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return field{}, false
}
