package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRunTrue measures what confinement costs per command: `true` run
// by the sandbox (re-exec, Landlock, seccomp, private tmp, reaping) against
// the plain process-group exec the tool used before.
func BenchmarkRunTrue(b *testing.B) {
	if !Detect().Available() {
		b.Skip("no sandbox")
	}
	base := b.TempDir()
	data := filepath.Join(base, "data")
	ws := filepath.Join(data, "workspace")
	os.MkdirAll(ws, 0o700)
	o := Options{Workspace: ws, DataDir: data}
	// RAVEN_BENCH_EXE measures a built raven binary as the supervisor
	// instead of this test binary.
	if exe := os.Getenv("RAVEN_BENCH_EXE"); exe != "" {
		o.Exe, o.ExeArgs = exe, []string{SupervisorCommand}
	}
	r, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sandboxed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := r.Run(context.Background(), Command{Command: "true", Timeout: 10 * time.Second})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("unsandboxed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.Dir = ws
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
