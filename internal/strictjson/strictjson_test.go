package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type dur time.Duration

func (d *dur) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q", s)
	}
	*d = dur(v)
	return nil
}

type inner struct {
	Name  string `json:"name"`
	Every dur    `json:"every"`
}

type Embedded struct {
	Shared int `json:"shared"`
}

type doc struct {
	Embedded
	Count int               `json:"count"`
	Inner inner             `json:"inner"`
	List  []inner           `json:"list"`
	Tags  map[string]inner  `json:"tags"`
	Ptr   *inner            `json:"ptr,omitempty"`
	Any   any               `json:"any"`
	Skip  string            `json:"-"`
	Raw   map[string]string `json:"raw"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		kind   error  // nil: success
		field  string // the full path named
		offset int64  // -1: not checked
	}{
		{"object", `{"count": 3, "inner": {"name": "x", "every": "1m"}}`, nil, "", -1},
		{"trailing whitespace ok", "{\"count\": 1}\n\t \r\n", nil, "", -1},
		{"leading whitespace ok", "\n  {}", nil, "", -1},
		{"embedded field", `{"shared": 2}`, nil, "", -1},
		{"case-insensitive like encoding/json", `{"Count": 2}`, nil, "", -1},
		{"null leaves the value", `null`, nil, "", -1},
		{"empty", ``, ErrEmpty, "", -1},
		{"only whitespace", " \n\t", ErrEmpty, "", -1},
		{"unknown top field", `{"nope": 1}`, ErrUnknownField, "nope", 1},
		{"unknown nested field", `{"inner": {"name": "x", "nope": 1}}`, ErrUnknownField, "inner.nope", 24},
		{"unknown field in list", `{"list": [{}, {"nope": 1}]}`, ErrUnknownField, "list[1].nope", 15},
		{"unknown field in map value", `{"tags": {"a": {"nope": 1}}}`, ErrUnknownField, "tags.a.nope", 16},
		{"unknown field behind pointer", `{"ptr": {"nope": 1}}`, ErrUnknownField, "ptr.nope", 9},
		{"dash field is unknown", `{"Skip": "x"}`, ErrUnknownField, "Skip", 1},
		{"trailing brace", `{"count": 1}}`, ErrTrailingData, "", 12},
		{"trailing object", `{} {}`, ErrTrailingData, "", 3},
		{"trailing garbage", "{}\nxyz", ErrTrailingData, "", 3},
		{"truncated", `{"count": `, ErrSyntax, "", -1},
		{"syntax", `{"count": 1,,}`, ErrSyntax, "", -1},
		{"type mismatch nested", `{"inner": {"name": 5}}`, ErrType, "inner.name", 19},
		{"type mismatch in list", `{"list": [{"name": true}]}`, ErrType, "list[0].name", -1},
		{"int overflow", `{"count": 1e40}`, ErrType, "count", -1},
		{"field decoder refuses", `{"inner": {"every": "soon"}}`, ErrValue, "inner.every", 20},
		{"unknown after a type error is not first", `{"count": "x", "nope": 1}`, ErrType, "count", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := Decode([]byte(tt.in), &d)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v (%T), want kind %v", err, err, tt.kind)
			}
			if e.Field != tt.field {
				t.Fatalf("field = %q, want %q (err %v)", e.Field, tt.field, err)
			}
			if tt.offset >= 0 && e.Offset != tt.offset {
				t.Fatalf("offset = %d, want %d (err %v)", e.Offset, tt.offset, err)
			}
			if tt.field != "" && !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("message %q does not name %s", err, tt.field)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	var d doc
	in := `{"count": 3, "inner": {"name": "x", "every": "90s"}, "list": [{"name": "a"}], "tags": {"k": {"name": "v"}}, "ptr": {"name": "p"}, "any": [1, {"z": 2}]}`
	if err := Decode([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.Count != 3 || d.Inner.Name != "x" || time.Duration(d.Inner.Every) != 90*time.Second || d.List[0].Name != "a" || d.Tags["k"].Name != "v" || d.Ptr.Name != "p" || d.Any == nil {
		t.Fatalf("decoded %+v", d)
	}
}

func TestDecodeReader(t *testing.T) {
	var d doc
	if err := DecodeReader(strings.NewReader(`{"count": 1}`), 12, &d); err != nil || d.Count != 1 {
		t.Fatalf("at the limit: %v %+v", err, d)
	}
	err := DecodeReader(strings.NewReader(`{"count": 10}`), 12, &d)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
	if err := DecodeReader(strings.NewReader(`{"count": 1}}`), 100, &d); !errors.Is(err, ErrTrailingData) {
		t.Fatalf("trailing through the reader: %v", err)
	}
}

func BenchmarkDecode(b *testing.B) {
	in := []byte(`{"count": 3, "inner": {"name": "x", "every": "90s"}, "list": [{"name": "a"}, {"name": "b"}], "tags": {"k": {"name": "v"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		if err := Decode(in, &d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibDecoder is the baseline: the json.Decoder with
// DisallowUnknownFields every caller used to build by hand.
func BenchmarkStdlibDecoder(b *testing.B) {
	in := []byte(`{"count": 3, "inner": {"name": "x", "every": "90s"}, "list": [{"name": "a"}, {"name": "b"}], "tags": {"k": {"name": "v"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecode: no input panics, and every failure is an *Error of one kind.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"inner":{"every":"1m"}}`, `{"list":[{"nope":1}]}`, `{}}`, `[`, `{"tags":{"a":{"name":1}}}`, `null`, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d doc
		err := Decode(in, &d)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("%q: %T %v", in, err, err)
		}
	})
}

// DecodeLarge decides as Decode does and reports Decode's errors.
func TestDecodeLargeAgreesWithDecode(t *testing.T) {
	type item struct {
		ID   string `json:"id"`
		Tags []int  `json:"tags,omitempty"`
	}
	type doc struct {
		Version int    `json:"version"`
		Items   []item `json:"items"`
	}
	cases := []string{
		`{"version":2,"items":[{"id":"a","tags":[1,2]},{"id":"b"}]}`,
		`  {"version":1,"items":[]}  `,
		`{"version":1,"items":[{"id":"a","extra":1}]}`,
		`{"version":1,"items":[]} {}`,
		`{"version":"x"}`,
		``,
		`   `,
		`{"version":1,"items":[{"ID":"case-insensitive like encoding/json"}]}`,
	}
	for _, c := range cases {
		var slow, fast doc
		serr := Decode([]byte(c), &slow)
		ferr := DecodeLarge([]byte(c), &fast)
		if (serr == nil) != (ferr == nil) || (serr != nil && serr.Error() != ferr.Error()) {
			t.Errorf("%q: Decode %v, DecodeLarge %v", c, serr, ferr)
		}
		if serr == nil && !reflect.DeepEqual(slow, fast) {
			t.Errorf("%q: decoded %+v vs %+v", c, slow, fast)
		}
	}
}
