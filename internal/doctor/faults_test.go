package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func TestDoctorFailsOnFaults(t *testing.T) {
	tests := []struct {
		name  string
		root  func(t *testing.T) string
		setup func(t *testing.T, p config.Paths)
		check string
		want  string
	}{
		{"zero-byte database", shortRoot, func(t *testing.T, p config.Paths) {
			os.WriteFile(p.DB(), nil, 0o600)
		}, "database", "raven.db"},
		{"garbage database", shortRoot, func(t *testing.T, p config.Paths) {
			os.WriteFile(p.DB(), []byte("garbage garbage garbage"), 0o600)
		}, "database", "raven.db"},
		{"world-readable token", shortRoot, func(t *testing.T, p config.Paths) {
			os.WriteFile(p.OperatorToken(), []byte("tok\n"), 0o600)
			os.Chmod(p.OperatorToken(), 0o644)
		}, "operator token", "chmod 600"},
		{"database moved aside by a start and not replaced", shortRoot, func(t *testing.T, p config.Paths) {
			os.WriteFile(p.DB()+".corrupt-20260101T000000.000000000Z", []byte("x"), 0o600)
		}, "database", "delete"},
		{"group-readable token", shortRoot, func(t *testing.T, p config.Paths) {
			os.WriteFile(p.OperatorToken(), []byte("tok\n"), 0o600)
			os.Chmod(p.OperatorToken(), 0o640)
		}, "operator token", "chmod 600"},
		{"socket path too long", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), strings.Repeat("d", 110))
		}, func(t *testing.T, p config.Paths) {}, "socket", "108"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.root(t)
			if err := os.MkdirAll(root, 0o700); err != nil {
				t.Fatal(err)
			}
			p, _ := config.NewPaths(root)
			tt.setup(t, p)
			c := find(Run(context.Background(), Options{Paths: p, Config: config.Default()}), tt.check)
			if c.Status != Fail || !strings.Contains(c.Detail+" "+c.Fix, tt.want) {
				t.Fatalf("%s check = %+v, want fail mentioning %q", tt.check, c, tt.want)
			}
		})
	}
}

func shortRoot(t *testing.T) string { return t.TempDir() }

func TestDoctorHealthyFaultChecks(t *testing.T) {
	root := t.TempDir()
	p, _ := config.NewPaths(root)
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.WriteFile(p.OperatorToken(), []byte("tok\n"), 0o600)
	checks := Run(context.Background(), Options{Paths: p, Config: config.Default()})
	for _, name := range []string{"database", "operator token", "socket", "corrupt files"} {
		if c := find(checks, name); c.Status != OK {
			t.Errorf("%s = %+v, want ok", name, c)
		}
	}
}
