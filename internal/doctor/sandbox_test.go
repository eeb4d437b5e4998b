package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/sandbox"
)

func TestSandboxCheck(t *testing.T) {
	landlock := sandbox.Mode{Kind: sandbox.KindLandlock, ABI: 7}
	none := sandbox.Mode{Kind: sandbox.KindNone, Reason: "landlock unavailable"}
	cases := []struct {
		name   string
		mode   sandbox.Mode
		set    func(*config.Config)
		status Status
		want   string
	}{
		{"landlock default", landlock, nil, OK, "landlock-v7"},
		{"none default is off", none, nil, Warn, "exec is off"},
		{"none approval-only", none, func(c *config.Config) { c.Tools.Exec.Unsandboxed = "approve" }, Warn, "approval-only"},
		{"exec disabled", none, func(c *config.Config) { c.Tools.Exec.Enabled = false }, OK, "disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := config.NewPaths(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			if tc.set != nil {
				tc.set(&cfg)
			}
			mode := tc.mode
			var got *Check
			for _, c := range Run(context.Background(), Options{Paths: p, Config: cfg, Sandbox: func() sandbox.Mode { return mode }}) {
				if c.Name == "sandbox" {
					got = &c
				}
			}
			if got == nil {
				t.Fatal("no sandbox check")
			}
			if got.Status != tc.status || !strings.Contains(got.Detail, tc.want) || !strings.Contains(got.Detail, mode.String()) {
				t.Fatalf("check = %+v, want %s containing %q", *got, tc.status, tc.want)
			}
		})
	}
}
