package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Proc is a raven command running in the background with a stdin pipe:
// an interactive `raven chat`, a `cron serve`, anything a test talks to
// while it runs.
type Proc struct {
	e      *Env
	args   []string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
}

// Start runs `raven args...` in the background. The cleanup kills it if
// it is still running when the test ends.
func (e *Env) Start(args ...string) *Proc {
	e.T.Helper()
	p := &Proc{e: e, args: args, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = e.Command(context.Background(), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		e.T.Fatal(err)
	}
	p.stdin = in
	if err := p.cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	e.T.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
			e.T.Logf("raven %s killed at cleanup\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	return p
}

// Send writes line and a newline to the process's stdin.
func (p *Proc) Send(line string) {
	p.e.T.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.e.T.Fatalf("e2e: write to raven %s: %v", strings.Join(p.args, " "), err)
	}
}

// CloseStdin closes stdin (end of input: Ctrl-D for a REPL).
func (p *Proc) CloseStdin() { p.stdin.Close() }

// Stdout and Stderr are what the process printed so far.
func (p *Proc) Stdout() string { return p.stdout.String() }
func (p *Proc) Stderr() string { return p.stderr.String() }

// WaitStdout waits until stdout contains s.
func (p *Proc) WaitStdout(within time.Duration, s string) {
	p.e.T.Helper()
	if err := poll(within, func() bool { return strings.Contains(p.stdout.String(), s) }); err != nil {
		p.e.T.Fatalf("e2e: raven %s never printed %q: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(p.args, " "), s, err, p.stdout, p.stderr)
	}
}

// WaitStderr waits until stderr contains s.
func (p *Proc) WaitStderr(within time.Duration, s string) {
	p.e.T.Helper()
	if err := poll(within, func() bool { return strings.Contains(p.stderr.String(), s) }); err != nil {
		p.e.T.Fatalf("e2e: raven %s never printed %q on stderr: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(p.args, " "), s, err, p.stdout, p.stderr)
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) {
	p.e.T.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.e.T.Fatal(err)
	}
}

// Wait waits up to within for the process to exit and returns its result;
// it fails the test if it is still running then.
func (p *Proc) Wait(within time.Duration) Result {
	p.e.T.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		p.e.T.Fatalf("e2e: raven %s still running after %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.args, " "), within, p.stdout, p.stderr)
	}
	return Result{Args: p.args, Stdout: p.stdout.String(), Stderr: p.stderr.String(), Code: p.cmd.ProcessState.ExitCode()}
}

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }
