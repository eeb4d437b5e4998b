package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Errors of argument validation; every one reaches the model as text.
var (
	// ErrInvalidArgs is matched by every refusal of a call's arguments:
	// not JSON, not fitting the tool's schema, not decoding strictly.
	ErrInvalidArgs = errors.New("invalid arguments")
	// ErrUnknownTool is returned for a call naming no registered tool.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrBadSchema is returned for a tool whose own schema cannot be
	// resolved (an MCP server's broken schema): the tool cannot be called,
	// the others still can.
	ErrBadSchema = errors.New("tool schema does not resolve")
)

// maxDetail bounds the validation message the model reads: the library
// quotes the offending value, which may be a megabyte of file content.
const maxDetail = 400

// schemaVersions are the $schema values jsonschema-go validates; it checks
// only when validating, so a tool declaring another draft is refused once,
// when its schema is resolved, rather than on every call.
var schemaVersions = []string{"", "https://json-schema.org/draft/2020-12/schema",
	"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#"}

// resolveParams resolves a tool's schema given as a decoded JSON map (an
// MCP server's, or a tool written before Typed).
func resolveParams(params map[string]any) (*jsonschema.Resolved, error) {
	if params == nil {
		params = map[string]any{"type": "object"}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return resolveSchema(&s)
}

func resolveSchema(s *jsonschema.Schema) (*jsonschema.Resolved, error) {
	ok := false
	for _, v := range schemaVersions {
		ok = ok || s.Schema == v
	}
	if !ok {
		return nil, fmt.Errorf("$schema %q is not draft-07 or 2020-12", s.Schema)
	}
	// No loader: a remote $ref is an error, never a fetch.
	return s.Resolve(nil)
}

// checkArgs decodes raw (empty means {}) and validates it against rs. The
// error names the tool and the field, bounded for the model.
func checkArgs(tool string, rs *jsonschema.Resolved, raw json.RawMessage) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return fmt.Errorf("%w for %s: not valid JSON: %v", ErrInvalidArgs, tool, err)
	}
	if err := rs.Validate(instance); err != nil {
		return fmt.Errorf("%w for %s: %s", ErrInvalidArgs, tool, explain(err))
	}
	return nil
}

// explain turns jsonschema-go's chain ("validating root: validating
// /properties/q/items: type: ...") into "q[]: type: ...": the innermost
// location as a field path, then the library's own reason.
func explain(err error) string {
	msg := err.Error()
	loc := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		where, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		loc, msg = where, tail
	}
	if field := fieldPath(loc); field != "" {
		msg = field + ": " + msg
	}
	if len(msg) > maxDetail {
		msg = truncateUTF8(msg, maxDetail) + "…"
	}
	return msg
}

// fieldPath maps a schema location (/properties/a/items/properties/b) to
// the argument it constrains (a[].b); "" for the root.
func fieldPath(loc string) string {
	if loc == "" || loc == "root" || !strings.HasPrefix(loc, "/") {
		return ""
	}
	var b strings.Builder
	segs := strings.Split(loc[1:], "/")
	for i := 0; i < len(segs); i++ {
		switch {
		case segs[i] == "properties" && i+1 < len(segs):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(segs[i+1])
			i++
		case segs[i] == "items":
			b.WriteString("[]")
		default:
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString(segs[i])
		}
	}
	return b.String()
}
