package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/raven-agent/raven/internal/strictjson"
)

// maxFileRead bounds what read_file returns to the model.
const maxFileRead = 256 << 10

// maxFileEdit bounds the file edit_file loads whole.
const maxFileEdit = 16 << 20

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

// pathArg decodes arguments that are only {"path": ...} and maps the path
// to a workspace-relative name.
func (w *Workspace) pathArg(raw json.RawMessage) (name string, err error) {
	var args struct{ Path string }
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	return w.Rel(args.Path)
}

// ReadFile is the read_file tool.
type ReadFile struct{ WS *Workspace }

func (ReadFile) Name() string        { return "read_file" }
func (ReadFile) Description() string { return "Read a text file from the workspace." }
func (ReadFile) Parameters() map[string]any {
	return pathSchema(nil)
}
func (t ReadFile) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	name, err := t.WS.pathArg(raw)
	if err != nil {
		return "", err
	}
	b, err := t.WS.readLimited(name, maxFileRead)
	if err != nil {
		return "", fmt.Errorf("read_file %s: %w", name, err)
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
	name, err := t.WS.Rel(a.Path)
	if err != nil {
		return "", err
	}
	if err := t.WS.writeAtomic(name, []byte(a.Content), 0o600); err != nil {
		return "", fmt.Errorf("write_file %s: %w", name, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), name), nil
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
	name, err := t.WS.Rel(a.Path)
	if err != nil {
		return "", err
	}
	b, err := t.WS.readLimited(name, maxFileEdit)
	if err != nil {
		return "", fmt.Errorf("edit_file %s: %w", name, err)
	}
	if len(b) > maxFileEdit {
		// Rewriting a prefix would lose the rest of the owner's file.
		return "", fmt.Errorf("edit_file %s: file is larger than %d MiB; edit it another way", name, maxFileEdit>>20)
	}
	switch n := strings.Count(string(b), a.OldText); n {
	case 0:
		return "", fmt.Errorf("edit_file %s: old_text not found", name)
	case 1:
	default:
		return "", fmt.Errorf("edit_file %s: old_text occurs %d times; include more context to make it unique", name, n)
	}
	out := strings.Replace(string(b), a.OldText, a.NewText, 1)
	if err := t.WS.writeAtomic(name, []byte(out), 0o600); err != nil {
		return "", fmt.Errorf("edit_file %s: %w", name, err)
	}
	return "edited " + name, nil
}

// ListDir is the list_dir tool.
type ListDir struct{ WS *Workspace }

func (ListDir) Name() string        { return "list_dir" }
func (ListDir) Description() string { return "List a workspace directory (directories end with /)." }
func (ListDir) Parameters() map[string]any {
	return pathSchema(nil)
}
func (t ListDir) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	name, err := t.WS.pathArg(raw)
	if err != nil {
		return "", err
	}
	ents, err := t.WS.readDir(name)
	if err != nil {
		return "", fmt.Errorf("list_dir %s: %w", name, err)
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
