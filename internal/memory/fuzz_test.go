package memory

import (
	"strings"
	"testing"
)

// segment is one H2 section of a markdown file as the splicer sees it: the
// heading line and every line up to the next "## " line (the preamble has
// no heading).
type segment struct{ heading, text string }

func segments(md string) []segment {
	var out []segment
	cur := segment{}
	for _, line := range strings.SplitAfter(md, "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			out = append(out, cur)
			cur = segment{heading: strings.TrimSpace(strings.TrimPrefix(line, "## ")), text: line}
			continue
		}
		cur.text += line
	}
	return append(out, cur)
}

// ownerText is md with the sections named heading left out: the bytes the
// splicer must never change.
func ownerText(md, heading string) []string {
	var out []string
	for i, s := range segments(md) {
		if i > 0 && s.heading == heading {
			continue
		}
		out = append(out, s.text)
	}
	return out
}

var fuzzHeadings = []string{"Deadlines", "Open loops", "Today's plan"}

// FuzzSpliceSection: splicing a section into attention.md never loses or
// changes a byte outside the replaced section, puts the body in, and a
// second splice of the same body changes nothing.
func FuzzSpliceSection(f *testing.F) {
	for _, s := range [][2]string{
		{"# Attention\n\n## Deadlines\n- 2026-12-05 tax return\n\n## Mine\nmy own notes\n", "- 2026-12-05 tax return (in 4 days)"},
		{"## Open loops\n- telegram:42: asked about trains\n## Deadlines\nold\n", "- 2026-12-24 flights"},
		{"owner text without a trailing newline", "- a"},
		{"", "- first"},
		{"## Deadlines", "body\n\n\n"},
		{"##  Deadlines  \r\nx\r\n## Notes\r\nkeep\r\n", "- y"},
		{"## Deadlines\nA\n## Notes\nmine\n## Deadlines\nB\n", "- z"},
		{"### Deadlines\nnot an H2\n", "- w"},
		{"## Notes\nmine\n", "- line\n## Notes\nfake"},
	} {
		for i := range fuzzHeadings {
			f.Add(s[0], uint8(i), s[1])
		}
	}
	f.Fuzz(func(t *testing.T, md string, h uint8, body string) {
		heading := fuzzHeadings[int(h)%len(fuzzHeadings)]
		out := SpliceSection(md, heading, body)
		if found := segmentsNamed(md, heading) > 0; !found {
			if !strings.HasPrefix(out, md) {
				t.Fatalf("appending a section changed the owner's text:\n md  %q\n out %q", md, out)
			}
		} else if got, want := ownerText(out, heading), ownerText(md, heading); !equalTexts(got, want, body) {
			t.Fatalf("bytes outside ## %s changed:\n md   %q\n body %q\n out  %q\n got  %q\n want %q", heading, md, body, out, got, want)
		}
		want := len(segments(md))
		if segmentsNamed(md, heading) == 0 {
			want++
		}
		if got := len(segments(out)); got != want {
			t.Fatalf("the body added or removed a section: %d sections, want %d\n md   %q\n body %q\n out  %q", got, want, md, body, out)
		}
		if !strings.Contains(body, "## ") && !strings.Contains(Sections(out)[heading], strings.TrimRight(body, "\n")) {
			t.Fatalf("body %q not in ## %s of %q", body, heading, out)
		}
		if again := SpliceSection(out, heading, body); again != out {
			t.Fatalf("second splice changed the file:\n 1st %q\n 2nd %q", out, again)
		}
	})
}

func segmentsNamed(md, heading string) int {
	n := 0
	for i, s := range segments(md) {
		if i > 0 && s.heading == heading {
			n++
		}
	}
	return n
}

// equalTexts compares owner sections; the last owner section before a
// replaced one may have lost nothing but may not gain anything either.
func equalTexts(got, want []string, _ string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
