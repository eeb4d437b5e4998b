package tools

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// maxFileRead bounds what read_file returns to the model.
const maxFileRead = 256 << 10

// maxFileEdit bounds the file edit_file loads whole.
const maxFileEdit = 16 << 20

// maxFileArg bounds content, old_text and new_text (characters).
const maxFileArg = 1 << 20

// File tool names.
const (
	ReadFileName  = "read_file"
	WriteFileName = "write_file"
	EditFileName  = "edit_file"
	ListDirName   = "list_dir"
)

// pathBound is every file tool's path limit.
var pathBound = Len("path", 1, 4096)

type pathArgs struct {
	Path string `json:"path" jsonschema:"path relative to the workspace"`
}

// NewReadFile returns the read_file tool over ws.
func NewReadFile(ws *Workspace) Tool {
	return Must(New(ReadFileName, "Read a text file from the workspace.", func(_ context.Context, a pathArgs) (string, error) {
		name, err := ws.Rel(a.Path)
		if err != nil {
			return "", err
		}
		b, err := ws.readLimited(name, maxFileRead)
		if err != nil {
			return "", fmt.Errorf("read_file %s: %w", name, err)
		}
		if len(b) > maxFileRead {
			return string(b[:maxFileRead]) + "\n[truncated: file is larger than 256 KiB]", nil
		}
		return string(b), nil
	}, pathBound))
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"path relative to the workspace"`
	Content string `json:"content"`
}

// NewWriteFile returns the write_file tool over ws.
func NewWriteFile(ws *Workspace) Tool {
	return Must(New(WriteFileName, "Create or replace a file in the workspace.", func(_ context.Context, a writeArgs) (string, error) {
		name, err := ws.Rel(a.Path)
		if err != nil {
			return "", err
		}
		if err := ws.writeAtomic(name, []byte(a.Content), 0o600); err != nil {
			return "", fmt.Errorf("write_file %s: %w", name, err)
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), name), nil
	}, pathBound, Len("content", 0, maxFileArg)))
}

type editArgs struct {
	Path    string `json:"path" jsonschema:"path relative to the workspace"`
	OldText string `json:"old_text"`
	NewText string `json:"new_text"`
}

// NewEditFile returns the edit_file tool over ws: replace one exact
// occurrence of old_text.
func NewEditFile(ws *Workspace) Tool {
	return Must(New(EditFileName, "Replace exactly one occurrence of old_text with new_text in a workspace file.",
		func(_ context.Context, a editArgs) (string, error) {
			name, err := ws.Rel(a.Path)
			if err != nil {
				return "", err
			}
			b, err := ws.readLimited(name, maxFileEdit)
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
			if err := ws.writeAtomic(name, []byte(out), 0o600); err != nil {
				return "", fmt.Errorf("edit_file %s: %w", name, err)
			}
			return "edited " + name, nil
		}, pathBound, Len("old_text", 1, maxFileArg), Len("new_text", 0, maxFileArg)))
}

// NewListDir returns the list_dir tool over ws.
func NewListDir(ws *Workspace) Tool {
	return Must(New(ListDirName, "List a workspace directory (directories end with /).", func(_ context.Context, a pathArgs) (string, error) {
		name, err := ws.Rel(a.Path)
		if err != nil {
			return "", err
		}
		ents, err := ws.readDir(name)
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
	}, pathBound))
}
