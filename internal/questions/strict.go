package questions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/raven-agent/raven/internal/strictjson"
	"github.com/raven-agent/raven/internal/tools"
)

// Bounds shared by every DTO. They are generous for people and small enough
// that a hostile client cannot make the service hold megabytes per call.
const (
	MaxParamsBytes     = 64 << 10
	MaxConversationLen = 256
	MaxQuestionLen     = 2000
	MaxHeaderLen       = 64
	MaxOptions         = 8
	MaxOptionLen       = 200
	MaxAnswerTextLen   = 4000
	// MaxBatchQuestions bounds one ask_user call.
	MaxBatchQuestions = 5
)

// decodeStrict decodes one JSON object into v, refusing unknown fields,
// trailing data, wrong types and oversize input, each as invalid_params.
func decodeStrict(data []byte, v any) error {
	if len(data) > MaxParamsBytes {
		return invalid("params larger than %d bytes", MaxParamsBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return invalid("params must be a JSON object")
	}
	if err := strictjson.Decode(trimmed, v); err != nil {
		if errors.Is(err, strictjson.ErrTrailingData) {
			return invalid("params: trailing data after the object")
		}
		return invalid("params: %v", err)
	}
	return nil
}

// runInvalidParams runs a typed tool, reporting oversize or invalid
// arguments as invalid_params like every other input of the service.
func runInvalidParams(ctx context.Context, t tools.Tool, raw json.RawMessage) (string, error) {
	if len(raw) > MaxParamsBytes {
		return "", invalid("params larger than %d bytes", MaxParamsBytes)
	}
	out, err := t.Run(ctx, raw)
	if errors.Is(err, tools.ErrInvalidArgs) {
		return "", invalid("%v", err)
	}
	return out, err
}

// checkString bounds a string field; required fields must be non-empty.
func checkString(field, s string, max int, required bool) error {
	if required && s == "" {
		return invalid("%s is required", field)
	}
	if len(s) > max {
		return invalid("%s longer than %d bytes", field, max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", field)
	}
	return nil
}

// checkUUID requires a canonical lower-case UUID: IDs are opaque, but a
// malformed one can never match and is refused before touching storage.
func checkUUID(field, s string) error {
	if s == "" {
		return invalid("%s is required", field)
	}
	u, err := uuid.Parse(s)
	if err != nil || u.String() != s {
		return invalid("%s is not a canonical UUID", field)
	}
	return nil
}

func newUUID() string { return uuid.NewString() }
