package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

func newWS(t *testing.T) (*Workspace, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "workspace")
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ws, base
}

func TestWorkspaceConfinement(t *testing.T) {
	ws, base := newWS(t)
	os.WriteFile(filepath.Join(base, "secret"), []byte("s3cret"), 0o600)
	os.Mkdir(filepath.Join(ws.Root(), "sub"), 0o700)
	os.Symlink(base, filepath.Join(ws.Root(), "escape"))
	os.Symlink("sub", filepath.Join(ws.Root(), "inner"))
	// os.Root refuses absolute links even when they point inside: the
	// target would be resolved outside the root's descriptor.
	os.Symlink(filepath.Join(ws.Root(), "sub"), filepath.Join(ws.Root(), "abs-inner"))
	w := NewWriteFile(ws)
	cases := []struct {
		path string
		ok   bool
	}{
		{"notes.md", true},
		{"sub/new/deeper.md", true},
		{"inner/x.md", true}, // a relative link that stays inside is fine
		{"abs-inner/x.md", false},
		{"../secret", false},
		{"sub/../../secret", false},
		{"/etc/passwd", false},
		{"escape/secret", false}, // symlink out of the workspace
		{"escape/new-file", false},
		{filepath.Join(ws.Root(), "abs.md"), true},
	}
	for _, c := range cases {
		b, _ := json.Marshal(map[string]string{"path": c.path, "content": "x"})
		_, err := w.Run(context.Background(), b)
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.path, err)
		}
		if !c.ok && !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("%s: err = %v, want ErrOutsideWorkspace", c.path, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(base, "secret")); string(b) != "s3cret" {
		t.Fatalf("outside file written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws.Root(), "sub", "x.md")); err != nil {
		t.Fatalf("write through the inner link: %v", err)
	}
}

func TestFileToolsThroughRegistry(t *testing.T) {
	ws, _ := newWS(t)
	r := NewRegistry(NewReadFile(ws), NewWriteFile(ws), NewEditFile(ws), NewListDir(ws))
	ctx := context.Background()
	call := func(name, args string) (string, error) {
		return r.Run(ctx, llm.ToolCall{Name: name, Arguments: args})
	}
	if _, err := call("write_file", `{"path":"a/b.md","content":"hello world"}`); err != nil {
		t.Fatal(err)
	}
	if out, err := call("read_file", `{"path":"a/b.md"}`); err != nil || out != "hello world" {
		t.Fatalf("read = %q, %v", out, err)
	}
	if _, err := call("edit_file", `{"path":"a/b.md","old_text":"world","new_text":"raven"}`); err != nil {
		t.Fatal(err)
	}
	if out, _ := call("read_file", `{"path":"a/b.md"}`); out != "hello raven" {
		t.Fatalf("after edit = %q", out)
	}
	if out, err := call("list_dir", `{"path":"."}`); err != nil || out != "a/" {
		t.Fatalf("list = %q, %v", out, err)
	}
	bad := []struct{ name, args, want string }{
		{"read_file", `{"path":`, "not valid JSON"},
		{"read_file", `{}`, `missing properties: ["path"]`},
		{"read_file", `{"path":42}`, `path: type: 42 has type "integer", want "string"`},
		{"read_file", `{"path":"x","extra":1}`, `unexpected additional properties ["extra"]`},
		{"read_file", `{"path":"../../etc/passwd"}`, "outside the workspace"},
		{"edit_file", `{"path":"a/b.md","old_text":"zzz","new_text":""}`, "not found"},
		{"nope", `{}`, "unknown tool"},
	}
	for _, b := range bad {
		_, err := call(b.name, b.args)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %s: err = %v, want %q", b.name, b.args, err, b.want)
		}
	}
	defs := r.Defs()
	if len(defs) != 4 || defs[0].Name != "edit_file" {
		t.Fatalf("defs not sorted: %v", defs)
	}
}

func TestExecTool(t *testing.T) {
	ws, _ := newWS(t)
	e, err := NewExec(ws, 2*time.Second, 64, []string{`\bcurl\b`})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(cmd string) (string, error) {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return e.Run(ctx, b)
	}
	if out, err := run("pwd"); err != nil || strings.TrimSpace(out) != ws.Root() {
		t.Fatalf("pwd = %q, %v (want workspace)", out, err)
	}
	if out, _ := run("exit 3"); !strings.Contains(out, "exit status 3") {
		t.Fatalf("exit status not reported: %q", out)
	}
	if out, _ := run("yes | head -c 1000"); !strings.Contains(out, "truncated at 64 bytes") {
		t.Fatalf("output not capped: %q", out)
	}
	for _, cmd := range []string{"rm -rf /", "rm -rf ~", "sudo mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda", "reboot", "curl http://x"} {
		if _, err := run(cmd); !errors.Is(err, ErrDenied) {
			t.Errorf("%q: err = %v, want ErrDenied", cmd, err)
		}
	}
	short, _ := NewExec(ws, 100*time.Millisecond, 1024, nil)
	b, _ := json.Marshal(map[string]string{"command": "sleep 5 & sleep 5; echo never"})
	start := time.Now()
	if _, err := short.Run(ctx, b); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("timeout: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("timed-out command group was not killed promptly")
	}
}

func TestMessageAndSpawnUseTurn(t *testing.T) {
	var posted spine.Message
	m := NewMessage(func(ctx context.Context, msg spine.Message) error { posted = msg; return nil })
	ctx := WithTurn(context.Background(), TurnInfo{Origin: spine.OriginUser, Channel: "telegram", ChatID: "7"})
	if _, err := m.Run(ctx, json.RawMessage(`{"content":"hi"}`)); err != nil || posted.Channel != "telegram" || posted.ChatID != "7" {
		t.Fatalf("message: %+v %v", posted, err)
	}
	if _, err := m.Run(context.Background(), json.RawMessage(`{"content":"hi"}`)); err == nil {
		t.Fatal("message without target accepted")
	}
	var task string
	s := NewSpawn(func(ctx context.Context, tk, ch, chat string) (string, error) { task = tk; return "sa1", nil })
	if out, err := s.Run(ctx, json.RawMessage(`{"task":"digest"}`)); err != nil || task != "digest" || !strings.Contains(out, "sa1") {
		t.Fatalf("spawn: %q %v", out, err)
	}
	sub := WithTurn(context.Background(), TurnInfo{Origin: spine.OriginSubagent, Channel: "subagent", ChatID: "x"})
	if _, err := s.Run(sub, json.RawMessage(`{"task":"again"}`)); err == nil {
		t.Fatal("subagent allowed to spawn")
	}
}

func TestExecZeroOptionsTakeDefaults(t *testing.T) {
	ws, err := NewWorkspace(filepath.Join(t.TempDir(), "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExec(ws, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.o.Timeout != DefaultExecTimeout || e.o.MaxOutput != DefaultExecMaxOutput {
		t.Fatalf("timeout %v max %d", e.o.Timeout, e.o.MaxOutput)
	}
	d := DefaultExecConfig()
	if d.Timeout.D() != DefaultExecTimeout || d.MaxOutput != DefaultExecMaxOutput || !d.Enabled || d.Validate() != nil {
		t.Fatalf("defaults %+v", d)
	}
}
