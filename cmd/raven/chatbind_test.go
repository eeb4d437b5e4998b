package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestChatBindingValidate(t *testing.T) {
	cases := []struct {
		name string
		b    chatBinding
		code int // 0: valid
		conv string
	}{
		{"default owner", chatBinding{}, 0, "cli:direct"},
		{"workspace", chatBinding{workspace: "/tmp"}, 0, "cli:direct"},
		{"native", chatBinding{native: "cli:seat"}, 0, "cli:seat"},
		{"native without channel", chatBinding{native: "seat"}, 2, ""},
		{"native and workspace", chatBinding{native: "cli:seat", workspace: "/tmp"}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.b.validate()
			if got := exitCodeOf(err); got != c.code {
				t.Fatalf("validate() = %v (code %d), want code %d", err, got, c.code)
			}
			if c.code == 0 && c.b.conversation() != c.conv {
				t.Fatalf("conversation() = %q, want %q", c.b.conversation(), c.conv)
			}
		})
	}
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}

func TestResolveWorkspace(t *testing.T) {
	data := t.TempDir()
	proj := t.TempDir()
	file := filepath.Join(proj, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, flag string
		ok         bool
		code       int
	}{
		{"explicit dir", proj, true, 0},
		{"missing dir", filepath.Join(proj, "nope"), false, 2},
		{"a file", file, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, ok, err := resolveWorkspace(c.flag, data)
			if exitCodeOf(err) != c.code || ok != c.ok || (ok && dir != proj) {
				t.Fatalf("resolveWorkspace(%q) = %q, %v, %v", c.flag, dir, ok, err)
			}
		})
	}
	// With no flag the default is where the command started, never the
	// data dir itself.
	t.Chdir(data)
	if dir, ok, err := resolveWorkspace("", data); ok || err != nil {
		t.Fatalf("default inside the data dir = %q, %v, %v; want none", dir, ok, err)
	}
	t.Chdir(proj)
	if dir, ok, err := resolveWorkspace("", data); !ok || err != nil || dir != proj {
		t.Fatalf("default in a project = %q, %v, %v; want %s", dir, ok, err, proj)
	}
}
