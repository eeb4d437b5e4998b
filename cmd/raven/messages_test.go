package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ravenChild runs this test binary as raven with a scrubbed environment
// (no model, key or data dir of the machine) and returns stdout, stderr
// and the exit code.
func ravenChild(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--data-dir", dir}, args...)...)
	cmd.Env = childEnviron()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func childEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAVEN_") || strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, childEnv+"=1")
}

// withModel is a data dir whose config.json names a model this process
// cannot build (no API key in the environment): "configured" all the same.
func withModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model":"openai/gpt-4o-mini"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Each message says what is true, with the exit code a script can rely on.
func TestMessagesTellTheTruth(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T) (dir string, args []string)
		code     int
		want     []string // in stdout
		notInAll []string // in neither stdout nor stderr
	}{
		{"cron run of a silent job with a model configured", func(t *testing.T) (string, []string) {
			dir := withModel(t)
			out, _, code := ravenChild(t, dir, "cron", "add", "--name", "tidy", "--message", "tidy up", "--every", "1h", "--silent")
			if code != 0 {
				t.Fatalf("cron add exit %d", code)
			}
			return dir, []string{"cron", "run", strings.TrimSpace(out)}
		}, 0, []string{": skipped (a silent job runs a model turn; raven cron run runs none — start raven gateway, which runs it with openai/gpt-4o-mini)"},
			[]string{"no model configured"}},
		{"cron run of a silent job without a model", func(t *testing.T) (string, []string) {
			dir := t.TempDir()
			out, _, _ := ravenChild(t, dir, "cron", "add", "--name", "tidy", "--message", "tidy up", "--every", "1h", "--silent")
			return dir, []string{"cron", "run", strings.TrimSpace(out)}
		}, 0, []string{": skipped (a silent job runs a model turn, and no model is configured)"}, nil},
		{"heartbeat trigger with no gateway", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"heartbeat", "trigger"}
		}, 0, []string{"wake queued (trg_", "for the next gateway start: no gateway runs on", "raven heartbeat run"},
			[]string{"picks it up"}},
		{"gateway status with no gateway", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"gateway", "status"}
		}, 3, []string{"gateway: not running"}, nil},
		{"gateway status --json with no gateway", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"gateway", "status", "--json"}
		}, 3, []string{`"running": false`}, nil},
		{"gateway status on a data dir that does not exist", func(t *testing.T) (string, []string) {
			return filepath.Join(t.TempDir(), "absent"), []string{"gateway", "status", "--json"}
		}, 3, []string{`"running": false`}, nil},
		{"chat -m with no model", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"chat", "-m", "hi"}
		}, 1, []string{"raven config set model"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, args := tt.setup(t)
			out, errOut, code := ravenChild(t, dir, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.notInAll {
				if strings.Contains(out+errOut, n) {
					t.Errorf("output says %q:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
				}
			}
		})
	}
}

// With the heartbeat disabled, `heartbeat trigger` queues nothing no
// gateway would act on, and says why and what to do.
func TestHeartbeatTriggerDisabled(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"heartbeat":{"enabled":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := ravenChild(t, dir, "heartbeat", "trigger")
	if code != 1 || out != "" || !strings.Contains(errOut, "the heartbeat is disabled (heartbeat.enabled=false)") ||
		!strings.Contains(errOut, "raven heartbeat run") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "sentinel", "triggers.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a trigger was queued: %v", err)
	}
}

// A status query leaves a data dir that does not exist absent.
func TestGatewayStatusCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	if _, _, code := ravenChild(t, dir, "gateway", "status"); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("status created the data dir: %v", err)
	}
}

// With a gateway running, `heartbeat trigger` and `cron run` name it.
func TestMessagesBesideGateway(t *testing.T) {
	dir := t.TempDir()
	gw := startGatewayChild(t, dir)
	out, errOut, code := ravenChild(t, dir, "heartbeat", "trigger")
	if code != 0 || !strings.Contains(out, "wake requested (trg_") || !strings.Contains(out, "the running gateway (pid ") {
		t.Fatalf("heartbeat trigger: exit %d\n%s\n%s", code, out, errOut)
	}
	id, _, code := ravenChild(t, dir, "cron", "add", "--name", "water", "--message", "drink water", "--every", "1h", "--deliver")
	if code != 0 {
		t.Fatalf("cron add exit %d", code)
	}
	out, errOut, code = ravenChild(t, dir, "cron", "run", strings.TrimSpace(id))
	if code != 0 || !strings.Contains(out, "the running gateway (pid ") || !strings.Contains(out, "fires it within a second") {
		t.Fatalf("cron run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ravenChild(t, dir, "sentinel", "discover")
	if code != 1 || !strings.Contains(errOut, "the running gateway has no model (pid ") || strings.Contains(out, "discovery requested") {
		t.Fatalf("sentinel discover beside a model-less gateway: exit %d\n%s\n%s", code, out, errOut)
	}
	gw.stop(t)
}

// `cron serve` with a model configured never claims there is none.
func TestCronServeWithModelConfigured(t *testing.T) {
	dir := withModel(t)
	cmd := exec.Command(os.Args[0], "--data-dir", dir, "cron", "serve")
	cmd.Env = childEnviron()
	errOut := &lockedBuffer{}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cron service started", func() bool { return strings.Contains(errOut.String(), "cron service started") })
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cron serve: %v\n%s", err, errOut)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("cron serve did not stop")
	}
	log := errOut.String()
	if strings.Contains(log, "no model configured") || !strings.Contains(log, "cron serve runs no model") {
		t.Fatalf("cron serve log:\n%s", log)
	}
}
