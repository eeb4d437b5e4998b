package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
)

func find(checks []Check, name string) Check {
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestRunCreatesNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "raven")
	p, err := config.NewPaths(root)
	if err != nil {
		t.Fatal(err)
	}
	checks := Run(context.Background(), Options{Paths: p, Config: config.Default()})
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("Run created %s (%v)", root, err)
	}
	if c := find(checks, "data dir"); c.Status != Fail || !strings.Contains(c.Detail, "does not exist") {
		t.Fatalf("data dir check %+v", c)
	}
	if c := find(checks, "config"); c.Status != Warn || !strings.Contains(c.Detail, "missing") || !strings.Contains(c.Detail, "default") {
		t.Fatalf("config check %+v", c)
	}
	if c := find(checks, "gateway"); c.Status != OK || c.Detail != "not running" {
		t.Fatalf("gateway check %+v", c)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	p, _ := config.NewPaths(dir)
	tests := []struct {
		name  string
		setup func()
		err   error
		want  Status
	}{
		{"missing", func() {}, nil, Warn},
		{"present", func() { os.WriteFile(p.Config(), []byte("{}"), 0o600) }, nil, OK},
		{"load error", func() {}, &config.Error{Key: "cron.max_sleep", Msg: "must be 10ms..1m"}, Fail},
		{"a directory", func() { os.Remove(p.Config()); os.Mkdir(p.Config(), 0o700) }, nil, Fail},
	}
	for _, tt := range tests {
		tt.setup()
		if c := configFile(Options{Paths: p, ConfigErr: tt.err}); c.Status != tt.want {
			t.Errorf("%s: %+v, want %s", tt.name, c, tt.want)
		}
	}
}
