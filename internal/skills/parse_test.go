package skills

import (
	"errors"
	"strings"
	"testing"
)

func TestParseProblemsNameTheLine(t *testing.T) {
	long := strings.Repeat("x", MaxDescriptionLen+1)
	cases := []struct {
		name, dir, src string
		// want is "line severity text" of each problem, in order.
		want []string
		is   error
		ok   bool
	}{
		{name: "minimal", dir: "pdf-forms", src: "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# Steps\n", ok: true},
		{name: "all keys", dir: "pdf-forms", ok: true,
			src: "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  when asked.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: me\n  version: \"1.0\"\nallowed-tools: exec read_file\n---\nbody\n"},
		{name: "allowed-tools as a list", dir: "a", src: "---\nname: a\ndescription: d\nallowed-tools: [exec, read_file]\n---\nb\n", ok: true},
		{name: "no front matter", dir: "a", src: "# just markdown\n", want: []string{"1 error must start with a --- line"}, is: ErrNoFrontMatter},
		{name: "unclosed", dir: "a", src: "---\nname: a\ndescription: d\n", want: []string{"1 error closing --- line"}, is: ErrNoFrontMatter},
		{name: "missing name", dir: "a", src: "---\ndescription: d\n---\nb\n", want: []string{"1 error name is required"}, is: ErrInvalid},
		{name: "missing description", dir: "a", src: "---\nname: a\n---\nb\n", want: []string{"1 error description is required"}, is: ErrInvalid},
		{name: "empty front matter", dir: "a", src: "---\n---\nb\n", want: []string{"1 error name is required", "1 error description is required"}},
		{name: "uppercase name", dir: "PDF", src: "---\ndescription: d\nname: PDF\n---\nb\n", want: []string{"3 error must be lowercase"}, is: ErrInvalid},
		{name: "double hyphen", dir: "a--b", src: "---\nname: a--b\ndescription: d\n---\nb\n", want: []string{"2 error single hyphens"}},
		{name: "leading hyphen", dir: "-a", src: "---\nname: -a\ndescription: d\n---\nb\n", want: []string{"2 error single hyphens"}},
		{name: "name too long", dir: "", src: "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\nb\n", want: []string{"2 error the limit is 64"}},
		{name: "name not the folder", dir: "other", src: "---\nname: a\ndescription: d\n---\nb\n", want: []string{`2 error must match its folder name "other"`}},
		{name: "description too long", dir: "a", src: "---\nname: a\ndescription: " + long + "\n---\nb\n", want: []string{"3 error description is 1025 characters"}, is: ErrTooLarge},
		{name: "unknown key warned", dir: "a", src: "---\nname: a\ndescription: d\nversion: 2\n---\nb\n", want: []string{`4 warning unknown key "version"`}, is: ErrUnknownKey, ok: true},
		{name: "duplicate key", dir: "a", src: "---\nname: a\ndescription: d\nname: a\n---\nb\n", want: []string{"4 error already defined on line 2"}},
		{name: "name not a string", dir: "a", src: "---\nname: [a]\ndescription: d\n---\nb\n", want: []string{"2 error name must be a string"}},
		{name: "metadata not a map", dir: "a", src: "---\nname: a\ndescription: d\nmetadata: x\n---\nb\n", want: []string{"4 error metadata must map"}},
		{name: "metadata nested", dir: "a", src: "---\nname: a\ndescription: d\nmetadata:\n  k:\n    deep: 1\n---\nb\n", want: []string{"6 error metadata must map"}},
		{name: "allowed-tools a map", dir: "a", src: "---\nname: a\ndescription: d\nallowed-tools:\n  x: y\n---\nb\n", want: []string{"5 error allowed-tools"}},
		{name: "yaml syntax error", dir: "a", src: "---\nname: a\ndescription: d\n  bad: [\n---\nb\n", want: []string{"4 error not valid YAML"}, is: ErrSyntax},
		// The YAML library's parser and scanner count lines differently;
		// each case pins the line a user is pointed to, per phase.
		{name: "unclosed flow sequence (parser)", dir: "a", src: "---\nname: a\ndescription: [unclosed\n---\nb\n", want: []string{"3 error did not find expected ',' or ']'"}, is: ErrSyntax},
		{name: "unclosed flow mapping on line one (parser)", dir: "a", src: "---\nname: {a\ndescription: d\n---\nb\n", want: []string{"3 error did not find expected ',' or '}'"}, is: ErrSyntax},
		{name: "bad indentation (parser)", dir: "a", src: "---\nname: a\ndescription: d\n- x\n---\nb\n", want: []string{"4 error did not find expected key"}, is: ErrSyntax},
		{name: "unterminated quote (scanner)", dir: "a", src: "---\nname: a\ndescription: \"open\nlicense: MIT\n---\nb\n", want: []string{"3 error not valid YAML"}, is: ErrSyntax},
		{name: "tab indentation", dir: "a", src: "---\nname: a\n\tdescription: d\n---\nb\n", want: []string{"3 error not valid YAML"}, is: ErrSyntax},
		{name: "not a mapping", dir: "a", src: "---\n- a\n- b\n---\nb\n", want: []string{"2 error must be a mapping"}},
		{name: "empty body warned", dir: "a", src: "---\nname: a\ndescription: d\n---\n\n", want: []string{"5 warning body is empty"}, ok: true},
		{name: "crlf", dir: "a", src: "---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n", ok: true},
		{name: "bom", dir: "a", src: "\ufeff---\nname: a\ndescription: d\n---\nbody\n", ok: true},
		{name: "not utf-8", dir: "a", src: "---\nname: a\ndescription: \xff\n---\nb\n", want: []string{"0 error not UTF-8"}},
		{name: "file too large", dir: "a", src: "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", MaxSkillFileBytes), want: []string{"0 error the limit is"}, is: ErrTooLarge},
		{name: "front matter too large", dir: "a", src: "---\nname: a\ndescription: d\n# " + strings.Repeat("x", MaxFrontMatterBytes) + "\n---\nb\n", want: []string{"2 error front matter is"}, is: ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Parse("skills/"+c.dir+"/SKILL.md", c.dir, []byte(c.src))
			if (p.Skill != nil) != c.ok {
				t.Fatalf("skill = %+v, want ok=%v; problems %v", p.Skill, c.ok, p.Problems)
			}
			if len(p.Problems) != len(c.want) {
				t.Fatalf("problems = %v, want %v", p.Problems, c.want)
			}
			for i, w := range c.want {
				var line int
				var sev, text string
				parts := strings.SplitN(w, " ", 3)
				sev, text = parts[1], parts[2]
				for _, ch := range parts[0] {
					line = line*10 + int(ch-'0')
				}
				got := p.Problems[i]
				if got.Line != line || string(got.Severity) != sev || !strings.Contains(got.Message, text) {
					t.Errorf("problem %d = %s, want line %d %s containing %q", i, got, line, sev, text)
				}
				if !strings.HasPrefix(got.String(), "skills/"+c.dir+"/SKILL.md") {
					t.Errorf("problem %d does not name the file: %s", i, got)
				}
			}
			if c.is != nil && !errors.Is(p.Problems[0], c.is) {
				t.Errorf("problem %v is not %v", p.Problems[0], c.is)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	src := "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  when asked.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: me\nallowed-tools: exec read_file\n---\n# Steps\n1. go\n"
	p := Parse("SKILL.md", "pdf-forms", []byte(src))
	s := p.Skill
	if s == nil {
		t.Fatal(p.Problems)
	}
	if s.Description != "Fill PDF forms when asked." || s.License != "MIT" || s.Compatibility != "needs python3" ||
		s.Metadata["author"] != "me" || strings.Join(s.AllowedTools, ",") != "exec,read_file" {
		t.Fatalf("parsed %+v", s)
	}
	if p.Body != "# Steps\n1. go\n" || s.BodyLine != 12 {
		t.Fatalf("body %q at line %d", p.Body, s.BodyLine)
	}
}

// Parse never panics, and a skill it accepts always satisfies the rules.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: d\n---\nb\n",
		"---\nname: &n a\ndescription: *n\nmetadata: {k: *n}\nallowed-tools: [*n]\n---\n",
		"---\na: &x [*x]\n---\n",
		"---\nname: a\ndescription: |\n  multi\n  line\n---\n",
		"---\n- [\n---\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p := Parse("SKILL.md", "a", []byte(src))
		if s := p.Skill; s != nil && (s.Name != "a" || s.Description == "" || len(Errors(p.Problems)) > 0) {
			t.Fatalf("accepted %+v with %v", s, p.Problems)
		}
		for _, pr := range p.Problems {
			if pr.Err == nil || pr.Message == "" {
				t.Fatalf("problem without a kind or message: %+v", pr)
			}
		}
	})
}
