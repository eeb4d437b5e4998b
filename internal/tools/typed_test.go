package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type echoArgs struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty"`
}

func TestTypedDerivesSchemaAndValidates(t *testing.T) {
	maxLen := 5
	tool, err := New("echo", "echo text", func(_ context.Context, a echoArgs) (string, error) {
		return strings.Repeat(a.Text, max(a.Times, 1)), nil
	}, func(s *jsonschema.Schema) { s.Properties["text"].MaxLength = &maxLen })
	if err != nil {
		t.Fatal(err)
	}
	p := tool.Parameters()
	if req, _ := p["required"].([]any); len(req) != 1 || req[0] != "text" {
		t.Fatalf("required = %v, want [text]", p["required"])
	}
	cases := []struct {
		args, want, wantErr string
	}{
		{`{"text":"ab","times":2}`, "abab", ""},
		{`{"text":"ab"}`, "ab", ""},
		{`{}`, "", "text"},
		{`{"text":"ab","extra":1}`, "", "extra"},
		{`{"text":"toolong"}`, "", "invalid arguments"},
		{`{"text":1}`, "", "invalid arguments"},
		{`{"text":`, "", "not valid JSON"},
	}
	for _, c := range cases {
		got, err := tool.Run(context.Background(), []byte(c.args))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err = %v, want containing %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.args, got, err, c.want)
		}
	}
}
