// Package e2e drives the built raven binary as a user does: a temp data dir,
// the CLI, a gateway process, its control socket and a fake model server.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// Defaults of the harness.
const (
	// DefaultModel is the --model every command gets unless Options.NoModel.
	DefaultModel = "openai/" + fakeopenai.DefaultModel
	// DefaultRunTimeout bounds one CLI command: a hang fails the test
	// instead of stalling the run.
	DefaultRunTimeout = 30 * time.Second
	// DefaultReadyTimeout bounds a gateway's start until its socket answers.
	DefaultReadyTimeout = 20 * time.Second
	// DefaultStopTimeout bounds a gateway's exit after SIGTERM.
	DefaultStopTimeout = 20 * time.Second
)

// Binary is the path of a built raven binary.
type Binary string

// Build compiles cmd/raven into dir (go build, tags as given) and returns
// the binary. Call it once from TestMain.
func Build(ctx context.Context, dir string, tags ...string) (Binary, error) {
	out := filepath.Join(dir, "raven")
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "github.com/raven-agent/raven/cmd/raven")
	cmd := exec.CommandContext(ctx, "go", args...)
	// The binary as shipped: without cgo, the sandbox's psx dependency
	// stays pure Go and the process does not map a C runtime (~16 MB RSS).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("e2e: go build: %w\n%s", err, b)
	}
	return Binary(out), nil
}

// Options configure an Env. The zero value is a user who ran `raven
// onboard` and points Raven at the fake model with --model openai/fake.
type Options struct {
	// NoModel runs every command without --model and without model
	// environment: the "no model configured" user.
	NoModel bool
	// Model overrides DefaultModel (e.g. "scripted:/path").
	Model string
	// SkipOnboard leaves the data dir empty (not even created).
	SkipOnboard bool
	// Config is merged into config.json after onboarding (dotted keys,
	// e.g. {"sentinel.enabled": false}); see Env.PatchConfig.
	Config map[string]any
	// Env are extra KEY=VALUE entries for every command.
	Env []string
	// FakeModel configures the fake model server.
	FakeModel fakeopenai.Options
}

// Env is one user's machine: a data dir, the fake model and the binary.
type Env struct {
	T       testing.TB
	Bin     Binary
	DataDir string
	// Model is the fake OpenAI-compatible server every command talks to
	// (OPENAI_BASE_URL); script it with Enqueue/On, read Requests.
	Model *fakeopenai.Server
	// Home is the HOME of every command (a temp dir, never the real one).
	Home string

	opts Options
	env  []string
}

// NewEnv makes a fresh Env and, unless opts.SkipOnboard, runs `raven
// onboard` and applies opts.Config. The binary is built once per test run
// (Build, from TestMain); each Env has its own data dir, fake
// OpenAI-compatible model on loopback and a scrubbed environment, so
// nothing of the machine's real config, keys or data dir leaks in:
//
//	e := NewEnv(t, bin, Options{})
//	e.Model.Enqueue(fakeopenai.Text("hello"))
//	r := e.MustRun("chat", "-m", "hi")  // r.Stdout == "hello\n"
//	g := e.StartGateway()               // returns once the socket answers
//	defer g.Stop()                      // SIGTERM, must exit 0
func NewEnv(t testing.TB, bin Binary, opts Options) *Env {
	t.Helper()
	if bin == "" {
		t.Fatal("e2e: no binary: call Build from TestMain")
	}
	root := t.TempDir()
	e := &Env{T: t, Bin: bin, DataDir: filepath.Join(root, "data"), Home: filepath.Join(root, "home"), opts: opts}
	if err := os.MkdirAll(e.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	e.Model = fakeopenai.Start(t, opts.FakeModel)
	e.env = scrubbedEnviron()
	e.env = append(e.env, "HOME="+e.Home, "RAVEN_HOME="+e.DataDir, "NO_COLOR=1", "TERM=dumb")
	if !opts.NoModel {
		e.env = append(e.env, "OPENAI_BASE_URL="+e.Model.BaseURL(), "OPENAI_API_KEY=x")
	}
	e.env = append(e.env, opts.Env...)
	if opts.SkipOnboard {
		return e
	}
	e.MustRun("onboard")
	if len(opts.Config) > 0 {
		e.PatchConfig(opts.Config)
	}
	return e
}

// scrubbedEnviron is the test process's environment without anything that
// would point raven at the machine's own model, keys or data dir.
func scrubbedEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAVEN_") || strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_BASE_URL") ||
			k == "HOME" || k == "XDG_CONFIG_HOME" || k == "XDG_DATA_HOME" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Path joins elem under the data dir (Path("raven.db")).
func (e *Env) Path(elem ...string) string {
	return filepath.Join(append([]string{e.DataDir}, elem...)...)
}

// Result is one finished command.
type Result struct {
	Args   []string
	Stdout string
	Stderr string
	// Code is the exit code (-1 when killed, e.g. by the run timeout).
	Code int
}

func (r Result) String() string {
	return fmt.Sprintf("raven %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// JSON decodes Stdout into v, failing t on error.
func (r Result) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s", err, r)
	}
}

// Command is the *exec.Cmd for `raven <global flags> args...` with the
// Env's environment, not started: for tests that need pipes or signals.
func (e *Env) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, string(e.Bin), e.argv(args)...)
	cmd.Env = append([]string(nil), e.env...)
	cmd.Dir = e.Home
	cmd.WaitDelay = 5 * time.Second // never hang on a pipe a stray grandchild holds
	return cmd
}

func (e *Env) argv(args []string) []string {
	out := []string{"--data-dir", e.DataDir}
	if !e.opts.NoModel {
		model := e.opts.Model
		if model == "" {
			model = DefaultModel
		}
		out = append(out, "--model", model)
	}
	return append(out, args...)
}

// Run runs one command to completion with no stdin and returns what it
// printed and its exit code. It never fails the test by itself.
func (e *Env) Run(args ...string) Result { return e.RunStdin("", args...) }

// RunStdin is Run with stdin.
func (e *Env) RunStdin(stdin string, args ...string) Result {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRunTimeout)
	defer cancel()
	cmd := e.Command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := Result{Args: args, Stdout: out.String(), Stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		e.T.Fatalf("e2e: raven %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		e.T.Fatalf("e2e: raven %s did not finish within %s\n%s", strings.Join(args, " "), DefaultRunTimeout, r)
	}
	return r
}

// MustRun is Run failing the test unless the command exits 0.
func (e *Env) MustRun(args ...string) Result {
	e.T.Helper()
	r := e.Run(args...)
	if r.Code != 0 {
		e.T.Fatalf("%s", r)
	}
	return r
}

// SetConfig runs `raven config set key value`, failing the test on error.
func (e *Env) SetConfig(key, value string) {
	e.T.Helper()
	e.MustRun("config", "set", key, value)
}

// PatchConfig merges dotted keys into config.json directly (creating
// nested objects), for keys `raven config set` does not reach or values it
// cannot spell. The file is rewritten whole; a gateway already running
// sees it only if it watches the file.
func (e *Env) PatchConfig(kv map[string]any) {
	e.T.Helper()
	path := e.Path("config.json")
	doc := map[string]any{}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.T.Fatal(err)
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &doc); err != nil {
			e.T.Fatalf("e2e: %s: %v", path, err)
		}
	}
	for key, v := range kv {
		parts := strings.Split(key, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		e.T.Fatal(err)
	}
	if err := os.MkdirAll(e.DataDir, 0o700); err != nil {
		e.T.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o600); err != nil {
		e.T.Fatal(err)
	}
}
