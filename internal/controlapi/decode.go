package controlapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/raven-agent/raven/internal/strictjson"
)

// Limits bound what DecodeStrict accepts anywhere inside params.
type Limits struct {
	MaxString int // bytes per string (keys included)
	MaxList   int // elements per array
	MaxDepth  int // nesting of objects and arrays
}

// DefaultLimits are generous for operator input yet keep one call cheap.
var defaultLimits = Limits{MaxString: 64 << 10, MaxList: 1000, MaxDepth: 16}

// DefaultLimits returns the limits DecodeStrict applies.
func DefaultLimits() Limits { return defaultLimits }

// DecodeStrict decodes params into dst, rejecting unknown fields, wrong
// types, trailing data and anything beyond DefaultLimits with an
// *RPCError (CodeInvalidParams). Absent or null params decode as {}.
func DecodeStrict(params json.RawMessage, dst any) error {
	return DecodeStrictLimits(params, dst, defaultLimits)
}

// DecodeStrictLimits is DecodeStrict with explicit limits.
func DecodeStrictLimits(params json.RawMessage, dst any, lim Limits) error {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	if !json.Valid(params) {
		return InvalidParams("malformed params: not valid JSON")
	}
	if params[0] != '{' {
		return InvalidParams("params must be a JSON object")
	}
	if err := checkBounds(params, lim); err != nil {
		return err
	}
	if err := strictjson.Decode(params, dst); err != nil {
		var se *strictjson.Error
		switch {
		case errors.Is(err, strictjson.ErrTrailingData):
			return InvalidParams("trailing data after params")
		case errors.As(err, &se) && se.Kind == strictjson.ErrUnknownField:
			return InvalidParams("unknown field %q", se.Field)
		case errors.As(err, &se) && se.Field != "":
			return InvalidParams("%s: %s", se.Field, se.Detail)
		case errors.As(err, &se) && se.Kind == strictjson.ErrType:
			return InvalidParams("params: %s", se.Detail)
		}
		return InvalidParams("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// checkBounds walks the tokens once so an oversize string or list is refused
// with a message naming the limit, before any handler sees it.
func checkBounds(data []byte, lim Limits) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		array bool
		n     int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return InvalidParams("malformed params: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if len(stack) > 0 && stack[len(stack)-1].array {
			if d, ok := tok.(json.Delim); !ok || (d != ']' && d != '}') {
				top := &stack[len(stack)-1]
				top.n++
				if top.n > lim.MaxList {
					return InvalidParams("a list has more than %d elements", lim.MaxList)
				}
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, frame{array: v == '['})
				if len(stack) > lim.MaxDepth {
					return InvalidParams("params nested deeper than %d", lim.MaxDepth)
				}
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if len(v) > lim.MaxString {
				return InvalidParams("a string is longer than %d bytes", lim.MaxString)
			}
		case json.Number:
			if len(v) > 64 {
				return InvalidParams("a number is longer than 64 characters")
			}
		}
	}
}
