package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpdateSectionNeverRewritesWhatItDidNotReadWhole(t *testing.T) {
	const limit = 100
	tests := []struct {
		name    string
		content string
		body    string
		mode    os.FileMode
		wantErr bool
	}{
		{"over the limit", strings.Repeat("x", limit) + "\n## Mine\nkeep\n", "new", 0o644, true},
		{"splice would pass the limit", "## Mine\nkeep\n", strings.Repeat("y", limit), 0o640, true},
		{"within the limit keeps the mode", "## Mine\nkeep\n", "new", 0o640, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "attention.md")
			os.WriteFile(p, []byte(tt.content), 0o600)
			os.Chmod(p, tt.mode)
			changed, err := UpdateSection(context.Background(), p, "Auto", tt.body, limit)
			got, _ := os.ReadFile(p)
			st, _ := os.Stat(p)
			if st.Mode().Perm() != tt.mode {
				t.Fatalf("mode %v, want %v", st.Mode().Perm(), tt.mode)
			}
			if tt.wantErr {
				var tl *TooLargeError
				if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Path != p || changed {
					t.Fatalf("err = %v changed = %v", err, changed)
				}
				if string(got) != tt.content {
					t.Fatalf("file changed: %q", got)
				}
				return
			}
			if err != nil || !changed || !strings.Contains(string(got), "## Mine\nkeep\n") || !strings.Contains(string(got), "## Auto\nnew\n") {
				t.Fatalf("err %v changed %v: %q", err, changed, got)
			}
		})
	}
}

func TestReadWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if s, err := ReadWhole(p, 10); s != "" || err != nil {
		t.Fatalf("missing: %q %v", s, err)
	}
	os.WriteFile(p, []byte("0123456789"), 0o600)
	if s, err := ReadWhole(p, 10); s != "0123456789" || err != nil {
		t.Fatalf("at limit: %q %v", s, err)
	}
	if _, err := ReadWhole(p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over: %v", err)
	}
}
