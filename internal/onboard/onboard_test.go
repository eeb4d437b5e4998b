package onboard

import (
	"context"
	"os"
	"testing"

	"github.com/raven-agent/raven/internal/config"
)

func TestRunIsIdempotentAndKeepsEdits(t *testing.T) {
	p, _ := config.NewPaths(t.TempDir())
	ctx := context.Background()
	steps, err := Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if !s.Created {
			t.Errorf("%s not created on first run", s.Path)
		}
	}
	if _, err := config.Load(p.Config()); err != nil {
		t.Fatalf("onboarded config does not load: %v", err)
	}
	os.WriteFile(p.Memory(), []byte("my own notes"), 0o600)
	tok, _ := os.ReadFile(p.OperatorToken())
	steps, err = Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Created {
			t.Errorf("%s re-created on second run", s.Path)
		}
	}
	if b, _ := os.ReadFile(p.Memory()); string(b) != "my own notes" {
		t.Fatalf("edited MEMORY.md overwritten: %q", b)
	}
	if tok2, _ := os.ReadFile(p.OperatorToken()); string(tok2) != string(tok) || len(tok) == 0 {
		t.Fatal("operator token changed on second onboard")
	}
	if st, _ := os.Stat(p.OperatorToken()); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
	}
}
