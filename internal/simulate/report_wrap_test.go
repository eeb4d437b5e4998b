package simulate

import (
	"reflect"
	"testing"
)

func TestWrapWords(t *testing.T) {
	cases := []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"short", 10, []string{"short"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"averyverylongword x", 5, []string{"averyverylongword", "x"}},
	}
	for _, c := range cases {
		if got := wrapWords(c.in, c.width); !reflect.DeepEqual(got, c.want) {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
