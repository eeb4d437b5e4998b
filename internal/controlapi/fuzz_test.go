package controlapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// fuzzDTO is shaped like the larger params (nested object, list, map,
// optional pointer) so the fuzzer reaches every decode path.
type fuzzDTO struct {
	Conversation string            `json:"conversation"`
	Text         string            `json:"text,omitempty"`
	Attachments  []string          `json:"attachments,omitempty"`
	AfterSeq     *int64            `json:"after_seq,omitempty"`
	Meta         map[string]string `json:"meta,omitempty"`
	Limits       *struct {
		N    int     `json:"n"`
		Frac float64 `json:"frac"`
	} `json:"limits,omitempty"`
}

// roundTrip decodes params into a fresh *T; on success it re-encodes the
// value and requires the encoding to decode to a value that encodes the
// same (omitempty makes {} and absent the same value on the wire). A
// refusal must be an *RPCError with CodeInvalidParams.
func roundTrip[T any](t *testing.T, params []byte) {
	var first T
	err := DecodeStrict(params, &first)
	if err != nil {
		var re *RPCError
		if !errors.As(err, &re) || re.Code != CodeInvalidParams || re.Message == "" {
			t.Fatalf("refusal of %q is not an invalid-params RPCError: %#v", params, err)
		}
		return
	}
	enc, err := json.Marshal(first)
	if err != nil {
		t.Fatalf("decoded %q but cannot encode %+v: %v", params, first, err)
	}
	var second T
	if err := DecodeStrict(enc, &second); err != nil {
		t.Fatalf("re-encoded %s refused: %v (from %q)", enc, err, params)
	}
	enc2, err := json.Marshal(second)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("round trip changed the value:\n in  %q\n 1st %s\n 2nd %s (%v)", params, enc, enc2, err)
	}
}

// FuzzDecodeStrict: every control-API DTO decodes strictly, never panics,
// refuses with a typed error and round-trips what it accepts.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `{"after_seq":42,"limit":100}`, `{"after_seq":-1}`,
		`{"conversation":"telegram:42","ttl_s":900}`, `{"token":"rvn_0123456789abcdef"}`,
		`{"conversation":"cli:main","text":"what's on today?","attachments":["a.png"],"meta":{"k":"v"},"limits":{"n":3,"frac":0.5}}`,
		`{"reason":"slow consumer","last_seq":17}`, `{"bogus":1}`, `{"n":1}{"n":2}`, `[1]`, `{"text":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		roundTrip[TailParams](t, params)
		roundTrip[SubscribeParams](t, params)
		roundTrip[ControlParams](t, params)
		roundTrip[DroppedParams](t, params)
		roundTrip[helloParams](t, params)
		roundTrip[fuzzDTO](t, params)
	})
}

// FuzzRequestRoundTrip: a frame is either a request whose re-encoding parses
// to the same request, or a typed JSON-RPC error (parse error, invalid
// request or invalid params).
func FuzzRequestRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a7","method":"auth.hello","params":{"token":"rvn_x"}}`,
		`{"jsonrpc":"2.0","method":"events.subscribe","params":null}`,
		`{"jsonrpc":"2.0","id":3,"method":"chat.send","params":{"conversation":"cli:main","text":"hi"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","x":1}`, `not json`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, rerr := parseRequest(frame)
		if rerr != nil {
			switch rerr.Code {
			case CodeParseError, CodeInvalidRequest, CodeInvalidParams:
			default:
				t.Fatalf("frame %q: unexpected code %d", frame, rerr.Code)
			}
			if req.ID != nil && validID(req.ID) == nil {
				t.Fatalf("frame %q: error sent under an id that cannot be echoed: %s", frame, req.ID)
			}
			return
		}
		enc, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("frame %q parsed but does not encode: %v", frame, err)
		}
		again, rerr := parseRequest(enc)
		if rerr != nil {
			t.Fatalf("re-encoded %s refused: %v (from %q)", enc, rerr, frame)
		}
		if again.Method != req.Method || !bytes.Equal(compact(t, again.ID), compact(t, req.ID)) || !bytes.Equal(compact(t, again.Params), compact(t, req.Params)) {
			t.Fatalf("round trip changed the request: %+v vs %+v", req, again)
		}
	})
}

// FuzzReadFrame: no frame longer than max is ever returned, and what
// comes back is a line of the input.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{}\n"), 64)
	f.Add([]byte("short\nlonger line here\n"), 8)
	f.Add([]byte("no newline at the end"), 100)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		r := bufio.NewReaderSize(bytes.NewReader(in), 16)
		var scratch []byte
		for range 1000 {
			line, err := readFrame(r, max, &scratch)
			if err != nil {
				return
			}
			if len(line) > max {
				t.Fatalf("frame of %d bytes returned with max %d", len(line), max)
			}
			if !bytes.Contains(in, append(bytes.Clone(line), '\n')) {
				t.Fatalf("frame %q is not a line of the input", line)
			}
		}
	})
}

// compact is raw's canonical form: decoded and encoded again, so an
// encoder's escaping (json.Marshal writes "<" as \u003c) or a duplicate
// key does not count as a change.
func compact(t *testing.T, raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %q: %v", raw, err)
	}
	return b
}
