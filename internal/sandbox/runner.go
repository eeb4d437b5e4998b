package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Errors of the runner.
var (
	// ErrUnavailable is returned when no sandbox can confine commands.
	ErrUnavailable = errors.New("sandbox: no OS sandbox available")
	// ErrPolicy is returned for a policy that cannot be enforced, such as
	// a granted path that would expose the data dir.
	ErrPolicy = errors.New("sandbox: policy refused")
	// ErrSetup is returned when the supervisor could not confine itself;
	// the command did not run.
	ErrSetup = errors.New("sandbox: could not confine the command")
)

// Defaults for Options.
const (
	DefaultTimeout = 60 * time.Second
	// DefaultKillGrace is how long the runner waits for the supervisor to
	// clean up after a cancel before it kills the supervisor itself.
	DefaultKillGrace = 2 * time.Second
)

// Options configure a Runner.
type Options struct {
	// Workspace is the one directory commands may write (read-write).
	Workspace string
	// DataDir holds tokens, config and the database: never granted, and
	// no granted path may contain it.
	DataDir string
	// ReadOnly adds hierarchies visible read-only beside the system ones.
	ReadOnly []string
	// EnvAllow adds variable names passed through; secret-looking names
	// are refused.
	EnvAllow []string
	// Exe and ExeArgs re-execute the supervisor: by default this binary
	// with SupervisorCommand. Tests point it at their own test binary.
	Exe     string
	ExeArgs []string
	// Mode overrides Detect (tests simulating a kernel without Landlock).
	Mode   *Mode
	Logger *slog.Logger
	// Environ is the parent environment to filter (default os.Environ).
	Environ func() []string
}

// Command is one run.
type Command struct {
	Command string
	// Dir is the working directory: the workspace or beneath it.
	Dir     string
	Timeout time.Duration
	// Network lets the command use the network.
	Network bool
	// ReadWrite adds approved hierarchies outside the workspace.
	ReadWrite []string
	// Unconfined skips Landlock and seccomp (the owner approved running
	// without a sandbox where none exists). The environment is still
	// scrubbed and every process still ends with the command.
	Unconfined     bool
	Stdout, Stderr io.Writer
	// Stdin feeds the command (nil: /dev/null). A long-lived stdio server
	// (an MCP server) speaks its protocol over Stdin and Stdout.
	Stdin io.Reader
	// Env adds KEY=VALUE pairs the owner configured for this command on top
	// of the scrubbed environment; they are set deliberately, so they are
	// not filtered as the inherited environment is.
	Env []string
}

// Result is how a run ended.
type Result struct {
	ExitCode int
	Signal   string
	TimedOut bool
	Canceled bool
	// Killed counts processes left behind by the command and killed.
	Killed int
}

// Runner runs commands confined. Safe for concurrent use.
type Runner struct {
	mode      Mode
	o         Options
	workspace string
	dataDir   string
	system    []string
}

// New returns a runner for the detected mode. It fails with ErrUnavailable
// when there is no sandbox (callers then turn exec off or approval-only) and
// with ErrPolicy when the layout would expose the data dir.
func New(o Options) (*Runner, error) {
	mode := Detect()
	if o.Mode != nil {
		mode = *o.Mode
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: find own binary: %w", err)
		}
		o.Exe, o.ExeArgs = exe, []string{SupervisorCommand}
	}
	if os.Getenv(supervisorMarker) != "" {
		return nil, fmt.Errorf("%w: already inside a sandbox supervisor (is the supervisor entry missing from this binary?)", ErrSetup)
	}
	r := &Runner{mode: mode, o: o}
	var err error
	if r.workspace, err = canonical(o.Workspace); err != nil {
		return nil, fmt.Errorf("%w: workspace: %v", ErrPolicy, err)
	}
	if r.dataDir, err = canonical(o.DataDir); err != nil {
		return nil, fmt.Errorf("%w: data dir: %v", ErrPolicy, err)
	}
	if within(r.dataDir, r.workspace) {
		return nil, fmt.Errorf("%w: the workspace %s contains the data dir %s", ErrPolicy, r.workspace, r.dataDir)
	}
	if err := checkEnvAllow(o.EnvAllow); err != nil {
		return nil, err
	}
	r.system = append(systemPaths(), o.ReadOnly...)
	for _, p := range append([]string{r.workspace}, r.system...) {
		if err := r.checkGrant(p); err != nil {
			return nil, err
		}
	}
	if !mode.Available() {
		// The runner is still returned: it can run a command the owner
		// approved to run unconfined (Command.Unconfined).
		return r, fmt.Errorf("%w: %s", ErrUnavailable, mode)
	}
	return r, nil
}

// Mode is the confinement in force.
func (r *Runner) Mode() Mode { return r.mode }

// Workspace is the canonical workspace directory.
func (r *Runner) Workspace() string { return r.workspace }

// CheckGrant refuses a hierarchy that cannot be granted read-write: one
// that is, contains, or lies inside the data dir (outside the workspace).
func (r *Runner) CheckGrant(path string) error {
	p, err := canonical(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	return r.checkGrant(p)
}

func (r *Runner) checkGrant(p string) error {
	if within(p, r.workspace) {
		return nil
	}
	if within(r.dataDir, p) || within(p, r.dataDir) {
		return fmt.Errorf("%w: granting %s would expose the data dir", ErrPolicy, p)
	}
	return nil
}

// Run runs c confined and waits for it and everything it started to end.
// A non-zero exit is a Result, not an error; errors mean the command could
// not be run confined (and then it did not run).
func (r *Runner) Run(ctx context.Context, c Command) (Result, error) {
	if !r.mode.Available() && !c.Unconfined {
		return Result{}, fmt.Errorf("%w: %s", ErrUnavailable, r.mode)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	dir := c.Dir
	if dir == "" {
		dir = r.workspace
	}
	if d, err := canonical(dir); err != nil || !within(d, r.workspace) {
		return Result{}, fmt.Errorf("%w: working directory %q is not inside the workspace", ErrPolicy, dir)
	}
	rw := []string{r.workspace}
	for _, p := range c.ReadWrite {
		cp, err := canonical(p)
		if err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrPolicy, err)
		}
		if err := r.checkGrant(cp); err != nil {
			return Result{}, err
		}
		rw = append(rw, cp)
	}
	// A private temp dir per run is HOME and TMPDIR: shared /tmp is not
	// visible, and nothing written there outlives the command.
	tmp, err := os.MkdirTemp("", "raven-exec-")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: private tmp: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := scrubEnv(r.o.Environ(), append(append([]string{}, defaultEnvAllow...), r.o.EnvAllow...), tmp, dir)
	env = append(env, c.Env...)
	sp := spec{
		Command: c.Command, Dir: dir, Env: env,
		ReadWrite: append(rw, tmp), ReadOnly: r.system, Devices: devicePaths,
		Network: c.Network, ABI: r.mode.ABI, Timeout: c.Timeout, Unconfined: c.Unconfined,
	}
	return r.supervise(ctx, sp, c.Stdin, c.Stdout, c.Stderr)
}

func (r *Runner) supervise(ctx context.Context, sp spec, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	raw, err := json.Marshal(sp)
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: encode spec: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: spec pipe: %w", err)
	}
	defer specR.Close()
	defer specW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	defer statusR.Close()
	defer statusW.Close()

	cmd := exec.Command(r.o.Exe, r.o.ExeArgs...)
	// The marker reaches the supervisor only, never the command: a binary
	// re-executed without a supervisor entry (a test binary lacking the
	// TestMain hook) then cannot start sandboxes of its own recursively.
	cmd.Env = append(append([]string{}, sp.Env...), supervisorMarker+"=1")
	cmd.Dir = sp.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{specR, statusW}
	// A session of its own: no controlling terminal, and one group to kill.
	// If raven dies, the supervisor gets SIGTERM (not SIGKILL) so it still
	// kills everything the command started before it exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	// Pdeathsig follows the thread that forked, not the process: keep
	// that thread alive, and ours, until the supervisor has been waited.
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return Result{}, fmt.Errorf("%w: start supervisor: %v", ErrSetup, err)
	}
	specR.Close()
	statusW.Close()
	// The spec is far below a pipe's buffer, so this write cannot block
	// on a supervisor that died early.
	_, werr := specW.Write(raw)
	specW.Close()

	var werrWait error
	select {
	case werrWait = <-waited:
	case <-ctx.Done():
		// The supervisor kills the command and its descendants on
		// SIGTERM; if it does not finish in time it is killed itself.
		cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(DefaultKillGrace)
		select {
		case werrWait = <-waited:
		case <-t.C:
			cmd.Process.Kill()
			werrWait = <-waited
		}
		t.Stop()
	}
	var st status
	body, _ := io.ReadAll(io.LimitReader(statusR, 64<<10))
	if jerr := json.Unmarshal(bytes.TrimSpace(body), &st); jerr != nil {
		return Result{Canceled: ctx.Err() != nil}, fmt.Errorf("%w: supervisor gave no report (%v, write %v, wait %v)", ErrSetup, jerr, werr, werrWait)
	}
	if !st.Started {
		return Result{}, fmt.Errorf("%w: %s", ErrSetup, st.Err)
	}
	res := Result{ExitCode: st.ExitCode, Signal: st.Signal, TimedOut: st.TimedOut, Canceled: st.Canceled, Killed: st.Killed}
	if st.Err != "" {
		return res, fmt.Errorf("sandbox: command: %s", st.Err)
	}
	r.o.Logger.Debug("sandboxed command finished", "exit", res.ExitCode, "timed_out", res.TimedOut, "killed", res.Killed)
	return res, nil
}

func canonical(p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q must be absolute", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	return filepath.Clean(real), nil
}

// within reports whether p is root or beneath it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+string(filepath.Separator))
}
