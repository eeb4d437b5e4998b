package controlapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeStrict(t *testing.T) {
	type dst struct {
		Name  string   `json:"name"`
		Items []string `json:"items"`
		N     int      `json:"n"`
	}
	lim := Limits{MaxString: 8, MaxList: 3, MaxDepth: 3}
	cases := []struct {
		name, in string
		ok       bool
		msg      string
	}{
		{"ok", `{"name":"a","items":["x","y"],"n":2}`, true, ""},
		{"empty", ``, true, ""},
		{"null", `null`, true, ""},
		{"unknown field", `{"bogus":1}`, false, "unknown field"},
		{"wrong type", `{"n":"2"}`, false, "n: want int"},
		{"long string", `{"name":"123456789"}`, false, "longer than 8"},
		{"long key", `{"123456789":1}`, false, "longer than 8"},
		{"long list", `{"items":["a","b","c","d"]}`, false, "more than 3"},
		{"deep", `{"items":[[[["a"]]]]}`, false, "deeper"},
		{"not an object", `[1]`, false, "JSON object"},
		{"trailing", `{"n":1}{"n":2}`, false, ""},
		{"malformed", `{"n":`, false, "malformed"},
		{"huge number", `{"n":` + strings.Repeat("9", 100) + `}`, false, "number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d dst
			err := DecodeStrictLimits(json.RawMessage(tc.in), &d, lim)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				if !IsCode(err, CodeInvalidParams) {
					t.Fatalf("code: %v", err)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("message %q lacks %q", err, tc.msg)
				}
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[]`, `{`, `{"id":{}}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		parseRequest(b) // must not panic
		var d struct{ A []string }
		_ = DecodeStrict(b, &d)
	})
}
