package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// maxFileRead bounds what read_file returns to the model.
const maxFileRead = 256 << 10

// decodeArgs decodes tool arguments strictly.
func decodeArgs(raw json.RawMessage, v any) error {
	if err := strictjson.Decode(raw, v); err != nil {
		return fmt.Errorf("bad arguments: %w", err)
	}
	return nil
}

func pathSchema(extra map[string]any, required ...string) map[string]any {
	props := map[string]any{"path": map[string]any{"type": "string", "description": "path relative to the workspace", "minLength": 1, "maxLength": 4096}}
	for k, v := range extra {
		props[k] = v
	}
	return map[string]any{"type": "object", "properties": props, "required": append([]string{"path"}, required...), "additionalProperties": false}
}

// pathArg decodes arguments that are only {"path": ...} and resolves the
// path inside the workspace.
func (w *Workspace) pathArg(raw json.RawMessage) (args struct{ Path string }, resolved string, err error) {
	if err := decodeArgs(raw, &args); err != nil {
		return args, "", err
	}
	resolved, err = w.Resolve(args.Path)
	return args, resolved, err
}

// ReadFile is the read_file tool.
type ReadFile struct{ WS *Workspace }

func (ReadFile) Name() string        { return "read_file" }
func (ReadFile) Description() string { return "Read a text file from the workspace." }
func (ReadFile) Parameters() map[string]any {
	return pathSchema(nil)
}
func (t ReadFile) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	a, p, err := t.WS.pathArg(raw)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("read_file %s: %w", a.Path, unwrapPathErr(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileRead+1))
	if err != nil {
		return "", fmt.Errorf("read_file %s: %w", a.Path, err)
	}
	if len(b) > maxFileRead {
		return string(b[:maxFileRead]) + "\n[truncated: file is larger than 256 KiB]", nil
	}
	return string(b), nil
}

// WriteFile is the write_file tool.
type WriteFile struct{ WS *Workspace }

func (WriteFile) Name() string        { return "write_file" }
func (WriteFile) Description() string { return "Create or replace a file in the workspace." }
func (WriteFile) Parameters() map[string]any {
	return pathSchema(map[string]any{"content": map[string]any{"type": "string", "maxLength": 1 << 20}}, "content")
}
func (t WriteFile) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct{ Path, Content string }
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	p, err := t.WS.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	if err := statefile.WriteAtomic(p, []byte(a.Content), 0o600); err != nil {
		return "", fmt.Errorf("write_file %s: %w", a.Path, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
}

// EditFile is the edit_file tool: replace one exact occurrence of old_text.
type EditFile struct{ WS *Workspace }

func (EditFile) Name() string { return "edit_file" }
func (EditFile) Description() string {
	return "Replace exactly one occurrence of old_text with new_text in a workspace file."
}
func (EditFile) Parameters() map[string]any {
	return pathSchema(map[string]any{
		"old_text": map[string]any{"type": "string", "minLength": 1, "maxLength": 1 << 20},
		"new_text": map[string]any{"type": "string", "maxLength": 1 << 20},
	}, "old_text", "new_text")
}
func (t EditFile) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Path    string
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	p, err := t.WS.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("edit_file %s: %w", a.Path, unwrapPathErr(err))
	}
	switch n := strings.Count(string(b), a.OldText); n {
	case 0:
		return "", fmt.Errorf("edit_file %s: old_text not found", a.Path)
	case 1:
	default:
		return "", fmt.Errorf("edit_file %s: old_text occurs %d times; include more context to make it unique", a.Path, n)
	}
	out := strings.Replace(string(b), a.OldText, a.NewText, 1)
	if err := statefile.WriteAtomic(p, []byte(out), 0o600); err != nil {
		return "", fmt.Errorf("edit_file %s: %w", a.Path, err)
	}
	return "edited " + a.Path, nil
}

// ListDir is the list_dir tool.
type ListDir struct{ WS *Workspace }

func (ListDir) Name() string        { return "list_dir" }
func (ListDir) Description() string { return "List a workspace directory (directories end with /)." }
func (ListDir) Parameters() map[string]any {
	return pathSchema(nil)
}
func (t ListDir) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	a, p, err := t.WS.pathArg(raw)
	if err != nil {
		return "", err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return "", fmt.Errorf("list_dir %s: %w", a.Path, unwrapPathErr(err))
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "(empty)", nil
	}
	return strings.Join(names, "\n"), nil
}

// unwrapPathErr drops the absolute path from an *os.PathError so the model
// sees workspace-relative names only.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
