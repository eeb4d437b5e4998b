package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
)

type fakeServers map[string]error

func (f fakeServers) Names() []string { return []string{"broken", "fs"} }
func (f fakeServers) Check(_ context.Context, name string) (int, error) {
	if err := f[name]; err != nil {
		return 0, err
	}
	return 3, nil
}

func TestMCPCheckEachServer(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	servers := fakeServers{"broken": errors.New(`mcp: server did not start: server "broken" exited with status 127`)}
	got := map[string]Check{}
	for _, c := range Run(context.Background(), Options{Paths: p, Config: config.Default(), MCP: servers}) {
		got[c.Name] = c
	}
	if c := got["mcp fs"]; c.Status != OK || !strings.Contains(c.Detail, "listed 3 tools") {
		t.Fatalf("fs: %+v", c)
	}
	if c := got["mcp broken"]; c.Status != Fail || !strings.Contains(c.Detail, "status 127") || !strings.Contains(c.Fix, "mcp.servers.broken") {
		t.Fatalf("broken: %+v", c)
	}
}
