package heartbeat

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHasTasks(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    bool
	}{
		{"empty", "", false},
		{"blank lines", "\n\n  \n\t\n", false},
		{"template", Template, false},
		{"template CRLF", strings.ReplaceAll(Template, "\n", "\r\n"), false},
		{"template with BOM", "\xef\xbb\xbf" + Template, false},
		{"headings only", "# Heartbeat\n## Tasks\n### Later\n#\n", false},
		{"comment one line", "<!-- nothing here -->\n", false},
		{"multi-line comment with bullets inside", "<!--\n- buy milk\n- call mom\n-->\n", false},
		{"empty bullets and checkboxes", "- \n* [ ]\n- [x]\n+\n1.\n---\n***\n", false},
		{"placeholder bullets", "## Tasks\n- (add a task here)\n", false},
		{"a task", "## Tasks\n- buy milk\n", true},
		{"task after template", Template + "- check the build at 9\n", true},
		{"plain prose", "remind me to stretch every hour", true},
		{"hashtag is not a heading", "#groceries buy milk", true},
		{"task after a comment on the same line", "<!-- note --> - water plants", true},
		{"task before a comment", "- water plants <!-- weekly -->", true},
		{"checkbox with text", "- [ ] renew passport", true},
		{"numbered task", "1. renew passport", true},
		{"unterminated comment hides the rest", "<!-- draft\n- buy milk\n", false},
		{"task after a closed multi-line comment", "<!--\nx\n--> call mom\n", true},
		{"placeholder text not whole line", "- (add a task here) and call mom", true},
		{"indented placeholder is still a placeholder", "   - (add a task here)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HasTasks([]byte(tc.content)); got != tc.want {
				t.Fatalf("HasTasks(%q) = %v, want %v", tc.content, got, tc.want)
			}
		})
	}
}

func TestReadFileCapAndState(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name          string
		content       *string
		cap           int
		wantPresent   bool
		wantActive    bool
		wantTruncated bool
	}{
		{"missing", nil, 1024, false, false, false},
		{"template", ptr(Template), 1024, true, false, false},
		{"task within cap", ptr("- call mom\n"), 1024, true, true, false},
		{"task beyond cap is not seen", ptr(strings.Repeat("# h\n", 512) + "- call mom\n"), 1024, true, false, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "HB"+string(rune('a'+i))+".md")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, data, err := ReadFile(path, tc.cap)
			if err != nil {
				t.Fatal(err)
			}
			if st.Present != tc.wantPresent || st.Active != tc.wantActive || st.Truncated != tc.wantTruncated {
				t.Fatalf("state %+v", st)
			}
			if len(data) > tc.cap {
				t.Fatalf("read %d bytes over a cap of %d", len(data), tc.cap)
			}
			if tc.wantTruncated && !bytes.HasSuffix(data, []byte("\n")) {
				t.Fatalf("truncated content not cut at a line end")
			}
		})
	}
}

func ptr(s string) *string { return &s }

// templateOnly64K is a 64 KiB HEARTBEAT.md with no task: the worst case for
// the no-model-call check, which must read all of it.
func templateOnly64K() []byte {
	var b bytes.Buffer
	for b.Len() < DefaultMaxFileBytes-len(Template) {
		b.WriteString(Template)
		b.WriteString("<!-- a longer comment\nspanning lines -->\n- [ ]\n")
	}
	return b.Bytes()
}

func BenchmarkHasTasksTemplateOnly64K(b *testing.B) {
	data := templateOnly64K()
	if HasTasks(data) {
		b.Fatal("benchmark input has tasks")
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if HasTasks(data) {
			b.Fatal("has tasks")
		}
	}
}

func BenchmarkReadFileTemplateOnly64K(b *testing.B) {
	path := filepath.Join(b.TempDir(), "HEARTBEAT.md")
	data := templateOnly64K()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := ReadFile(path, DefaultMaxFileBytes)
		if err != nil || st.Active {
			b.Fatal(st, err)
		}
	}
}
