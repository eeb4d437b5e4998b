//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// SupervisorCommand is the hidden argument the raven binary re-executes
// itself with; the entry point for it must call Supervise.
const SupervisorCommand = "__sandbox-exec"

// Supervise is the re-executed supervisor's whole life: read the spec,
// become the subreaper of everything the command starts, confine the
// thread that forks the command, run it, kill whatever it left behind, and
// report. It returns the process exit code (the report itself goes to the
// status pipe).
func Supervise() int {
	syscall.CloseOnExec(specFD)
	syscall.CloseOnExec(statusFD)
	out := os.NewFile(statusFD, "status")
	st := supervise()
	if err := json.NewEncoder(out).Encode(st); err != nil {
		fmt.Fprintf(os.Stderr, "raven sandbox: report: %v\n", err)
		return 70
	}
	out.Close()
	if !st.Started {
		fmt.Fprintf(os.Stderr, "raven sandbox: %s\n", st.Err)
		return 70
	}
	return 0
}

func supervise() status {
	in := os.NewFile(specFD, "spec")
	raw, err := io.ReadAll(io.LimitReader(in, maxSpecBytes))
	in.Close()
	if err != nil {
		return status{Err: fmt.Sprintf("read spec: %v", err)}
	}
	var sp spec
	if err := json.Unmarshal(raw, &sp); err != nil {
		return status{Err: fmt.Sprintf("decode spec: %v", err)}
	}
	// Orphans (a `setsid cmd &` included) are reparented to us instead of
	// init, so nothing the command starts can outlive it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return status{Err: fmt.Sprintf("subreaper: %v", err)}
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	cmd, err := startConfined(sp)
	if err != nil {
		return status{Err: err.Error()}
	}
	st := status{Started: true}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(sp.Timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		st.TimedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
	case <-term:
		st.Canceled = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
	}
	st.Killed = reapAll()
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &ee):
		st.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.Signal = ws.Signal().String()
		}
	default:
		st.Err = waitErr.Error()
	}
	return st
}

// startConfined starts the command from a thread of its own that it
// confines first: the child inherits that thread's Landlock domain and
// seccomp filter, while the main thread (the one other processes see as
// this pid) stays outside the domain, so the command can neither signal
// its supervisor away (Landlock scoping) nor read its memory or fds. The
// confined thread is never unlocked, so the Go runtime never reuses it.
func startConfined(sp spec) (*exec.Cmd, error) {
	runtime.LockOSThread() // pin main to its thread so the confined one is another
	type started struct {
		cmd *exec.Cmd
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		if !sp.Unconfined {
			if err := confineThread(sp); err != nil {
				ch <- started{err: err}
				return
			}
		}
		cmd := exec.Command("/bin/sh", "-c", sp.Command)
		cmd.Dir = sp.Dir
		cmd.Env = sp.Env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			ch <- started{err: fmt.Errorf("start: %w", err)}
			return
		}
		ch <- started{cmd: cmd}
		// Returning while locked ends this thread: nothing else ever
		// runs confined by accident, and the child is unaffected.
	}()
	s := <-ch
	return s.cmd, s.err
}

// confineThread applies no_new_privs, the Landlock ruleset and, with the
// network off, the seccomp filter to the calling (locked) thread.
func confineThread(sp spec) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	cfg := landlock.V11.BestEffort()
	if sp.Network {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.NewRulesetFD(rules(sp)...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		// Best effort found nothing to enforce: refuse rather than run
		// a command the runner believes is confined.
		return errors.New("landlock is not available in this kernel")
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock restrict: %w", err)
	}
	return installSocketFilter(sp.Network, sp.ABI >= abiUnixPath)
}

func rules(sp spec) []landlock.Rule {
	var roDirs, roFiles, rwDirs, rwFiles []string
	split := func(paths []string, dirs, files *[]string) {
		for _, p := range paths {
			fi, err := os.Stat(p)
			switch {
			case err != nil:
				continue // a missing optional system dir
			case fi.IsDir():
				*dirs = append(*dirs, p)
			default:
				*files = append(*files, p)
			}
		}
	}
	split(sp.ReadOnly, &roDirs, &roFiles)
	split(sp.ReadWrite, &rwDirs, &rwFiles)
	var devs []string
	split(sp.Devices, &devs, &devs)
	return []landlock.Rule{
		landlock.RODirs(roDirs...),
		landlock.ROFiles(roFiles...),
		// Refer lets `mv` and `git` move files between workspace dirs.
		landlock.RWDirs(rwDirs...).WithRefer(),
		landlock.RWFiles(rwFiles...),
		landlock.RWFiles(devs...).WithIoctlDev(),
	}
}

// reapAll kills every remaining descendant (all of them are our children
// by now or will be once their parent dies, since we are the subreaper)
// and reaps them. It returns how many it had to kill.
func reapAll() int {
	killed := make(map[int]bool)
	self := os.Getpid()
	for {
		var ws syscall.WaitStatus
		// Reap what has already exited; ECHILD means nothing is left,
		// which spares the /proc scan in the common case.
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return len(killed)
		}
		if pid > 0 {
			continue
		}
		for _, pid := range childrenOf(self) {
			if !killed[pid] && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			return len(killed)
		}
	}
}
