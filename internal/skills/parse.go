package skills

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// nameRule is the format's name: lowercase letters and digits in groups
// joined by single hyphens (so no leading, trailing or doubled hyphen).
var nameRule = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// yamlLine finds the line number in the YAML library's error text, the one
// place it reports it.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// knownKeys are the front matter keys of the Agent Skills format.
var knownKeys = map[string]bool{
	"name": true, "description": true, "license": true, "compatibility": true, "metadata": true, "allowed-tools": true,
}

// Parsed is a SKILL.md read and checked.
type Parsed struct {
	// Skill is nil when an error-severity problem keeps it out.
	Skill    *Skill
	Body     string
	Problems []Problem
}

// Parse reads SKILL.md's bytes: front matter between --- lines, then the
// markdown body. file names it in problems; dirName, when set, is the
// folder the name must match. Line numbers are SKILL.md's own.
func Parse(file, dirName string, data []byte) Parsed {
	var out Parsed
	add := func(line int, sev Severity, kind error, format string, args ...any) {
		out.Problems = append(out.Problems, Problem{File: file, Line: line, Severity: sev, Err: kind, Message: fmt.Sprintf(format, args...)})
	}
	if len(data) > MaxSkillFileBytes {
		add(0, SeverityError, ErrTooLarge, "%s is %d bytes; the limit is %d", FileName, len(data), MaxSkillFileBytes)
		return out
	}
	if !utf8.Valid(data) {
		add(0, SeverityError, ErrInvalid, "%s is not UTF-8 text", FileName)
		return out
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	front, body, bodyLine, ok := splitFrontMatter(data)
	if !ok {
		add(1, SeverityError, ErrNoFrontMatter, "%s must start with a --- line, then the YAML front matter (name, description), then a closing --- line", FileName)
		return out
	}
	if len(front) > MaxFrontMatterBytes {
		add(2, SeverityError, ErrTooLarge, "the front matter is %d bytes; the limit is %d", len(front), MaxFrontMatterBytes)
		return out
	}
	// The front matter starts on line 2: the YAML library counts from 1.
	const offset = 1
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		line, msg := syntaxLine(err)
		line += offset
		add(line, SeverityError, ErrSyntax, "front matter is not valid YAML: %s", msg)
		return out
	}
	s := &Skill{File: file, BodyLine: bodyLine}
	seen := map[string]int{}
	// invalid keys were reported already; "name is required" would repeat them.
	invalid := map[string]bool{}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = deref(doc.Content[0])
	}
	switch {
	case root == nil || (root.Kind == yaml.ScalarNode && root.Tag == "!!null"):
		// Empty front matter: the missing-key errors below say what to add.
	case root.Kind != yaml.MappingNode:
		add(root.Line+offset, SeverityError, ErrInvalid, "front matter must be a mapping of keys (name: …, description: …)")
		return out
	default:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], deref(root.Content[i+1])
			line := k.Line + offset
			if prev, dup := seen[k.Value]; dup {
				add(line, SeverityError, ErrInvalid, "key %q is already defined on line %d", k.Value, prev)
				continue
			}
			seen[k.Value] = line
			if !knownKeys[k.Value] {
				add(line, SeverityWarning, ErrUnknownKey, "unknown key %q is ignored (known: name, description, license, compatibility, metadata, allowed-tools)", k.Value)
				continue
			}
			vline := v.Line + offset
			switch k.Value {
			case "name", "description", "license", "compatibility":
				str, ok := scalar(v)
				if !ok {
					add(vline, SeverityError, ErrInvalid, "%s must be a string", k.Value)
					invalid[k.Value] = true
					continue
				}
				switch k.Value {
				case "name":
					s.Name = str
				case "description":
					s.Description = str
				case "license":
					s.License = str
				case "compatibility":
					s.Compatibility = str
				}
			case "metadata":
				md, bad := stringMap(v)
				if bad != nil {
					add(bad.Line+offset, SeverityError, ErrInvalid, "metadata must map names to strings")
					continue
				}
				s.Metadata = md
			case "allowed-tools":
				tools, bad := toolList(v)
				if bad != nil {
					add(bad.Line+offset, SeverityError, ErrInvalid, "allowed-tools must be a space-separated string (or a list) of tool names")
					continue
				}
				s.AllowedTools = tools
			}
		}
	}
	s.Name = strings.TrimSpace(s.Name)
	s.Description = strings.TrimSpace(s.Description)
	lineOf := func(key string) int {
		if l, ok := seen[key]; ok {
			return l
		}
		return 1
	}
	switch n := s.Name; {
	case invalid["name"]:
	case n == "":
		add(lineOf("name"), SeverityError, ErrInvalid, "name is required")
	case utf8.RuneCountInString(n) > MaxNameLen:
		add(lineOf("name"), SeverityError, ErrInvalid, "name %q is %d characters; the limit is %d", n, utf8.RuneCountInString(n), MaxNameLen)
	case !nameRule.MatchString(n):
		add(lineOf("name"), SeverityError, ErrInvalid, "name %q must be lowercase letters, digits and single hyphens, not starting or ending with one", n)
	case dirName != "" && n != dirName:
		add(lineOf("name"), SeverityError, ErrInvalid, "name %q must match its folder name %q", n, dirName)
	}
	switch d := s.Description; {
	case invalid["description"]:
	case d == "":
		add(lineOf("description"), SeverityError, ErrInvalid, "description is required: say what the skill does and when to use it")
	case utf8.RuneCountInString(d) > MaxDescriptionLen:
		add(lineOf("description"), SeverityError, ErrTooLarge, "description is %d characters; the limit is %d", utf8.RuneCountInString(d), MaxDescriptionLen)
	}
	if n := utf8.RuneCountInString(s.Compatibility); n > MaxCompatibilityLen {
		add(lineOf("compatibility"), SeverityError, ErrTooLarge, "compatibility is %d characters; the limit is %d", n, MaxCompatibilityLen)
	}
	if strings.TrimSpace(string(body)) == "" {
		add(bodyLine, SeverityWarning, ErrInvalid, "the body is empty: use_skill will have no instructions to give")
	}
	out.Body = string(body)
	if len(Errors(out.Problems)) == 0 {
		out.Skill = s
	}
	return out
}

// parserPhase are the messages of the YAML library's parser (as opposed to
// its scanner). Its parser reports a 0-based line, or none for the first
// line, where the scanner's lines are 1-based; the line a user is pointed
// to must be the same for both.
var parserPhase = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

// syntaxLine is the 1-based line of the YAML text a syntax error is on,
// and the error's message without it.
func syntaxLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimPrefix(strings.Replace(msg, m[0], "", 1), ": ")
	}
	if slices.Contains(parserPhase, msg) {
		line++
	}
	return max(line, 1), msg
}

// splitFrontMatter cuts data at its first two --- lines. bodyLine is the
// line the body starts on.
func splitFrontMatter(data []byte) (front, body []byte, bodyLine int, ok bool) {
	first, _, found := bytes.Cut(data, []byte("\n"))
	if !found || !isFence(first) {
		return nil, nil, 0, false
	}
	start := len(first) + 1
	line := 1
	for pos := start; pos < len(data); {
		line++
		eol := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if eol >= 0 {
			eol += pos
			next = eol + 1
		} else {
			eol = len(data)
		}
		if isFence(data[pos:eol]) {
			return data[start:pos], data[next:], line + 1, true
		}
		pos = next
	}
	return nil, nil, 0, false
}

func isFence(line []byte) bool { return string(bytes.TrimRight(line, " \t\r")) == "---" }

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// scalar is a node's text when it is a scalar; null is "".
func scalar(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

// stringMap reads a mapping of scalars; bad is the first node that is not.
func stringMap(n *yaml.Node) (map[string]string, *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, n
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, ok1 := scalar(deref(n.Content[i]))
		v, ok2 := scalar(deref(n.Content[i+1]))
		if !ok1 {
			return nil, n.Content[i]
		}
		if !ok2 {
			return nil, n.Content[i+1]
		}
		out[k] = v
	}
	return out, nil
}

// toolList reads allowed-tools: the format's space-separated string, or
// the YAML list some skills use.
func toolList(n *yaml.Node) ([]string, *yaml.Node) {
	if s, ok := scalar(n); ok {
		return strings.Fields(s), nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, n
	}
	var out []string
	for _, c := range n.Content {
		s, ok := scalar(deref(c))
		if !ok {
			return nil, c
		}
		out = append(out, strings.Fields(s)...)
	}
	return out, nil
}
