package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type layout struct {
	base, data, ws string
	r              *Runner
}

// newLayout lays out a data dir as raven does (secrets beside the
// workspace) and a runner with the default options.
func newLayout(t *testing.T, env ...string) layout {
	t.Helper()
	if !Detect().Available() {
		t.Skipf("no sandbox on this kernel: %s", Detect())
	}
	base := t.TempDir()
	data := filepath.Join(base, "data")
	ws := filepath.Join(data, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"operator.token": "tok-SECRET", "config.json": `{"api_key":"sk-SECRET"}`, "raven.db": "SQLite"} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Workspace: ws, DataDir: data}
	if env != nil {
		o.Environ = func() []string { return env }
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return layout{base: base, data: data, ws: r.Workspace(), r: r}
}

func (l layout) run(t *testing.T, c Command) (string, Result) {
	t.Helper()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if c.Timeout == 0 {
		c.Timeout = 20 * time.Second
	}
	res, err := l.r.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("run %q: %v (output %q)", c.Command, err, out.String())
	}
	return out.String(), res
}

func TestDetectReportsKernel(t *testing.T) {
	m := Detect()
	t.Logf("sandbox mode: %s", m)
	if m.Available() && m.ABI < 1 {
		t.Fatalf("available with ABI %d", m.ABI)
	}
	if !m.Available() && !strings.HasPrefix(m.String(), "none") {
		t.Fatalf("unavailable mode prints %q", m)
	}
}

func TestCommandRunsInWorkspace(t *testing.T) {
	l := newLayout(t)
	out, res := l.run(t, Command{Command: "pwd; echo hi > note.txt; mkdir -p a b; mv note.txt a/; mv a/note.txt b/; cat b/note.txt; ls /usr/bin/env; echo $TMPDIR; echo x > $TMPDIR/t && cat $TMPDIR/t"})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != l.ws || lines[1] != "hi" || lines[len(lines)-1] != "x" {
		t.Fatalf("output %q", out)
	}
	if _, res := l.run(t, Command{Command: "exit 7"}); res.ExitCode != 7 {
		t.Fatalf("exit code %d", res.ExitCode)
	}
}

// The data dir is invisible: its secrets cannot be read, listed or copied.
func TestDataDirInvisible(t *testing.T) {
	t.Setenv("RAVEN_TEST_TOKEN", "SECRET-in-parent-env")
	l := newLayout(t)
	os.Chdir(l.data)
	defer os.Chdir("/")
	for _, cmd := range []string{
		"cat " + filepath.Join(l.data, "operator.token"),
		"cat ../operator.token",
		"cat " + filepath.Join(l.data, "config.json"),
		"cat ../raven.db",
		"ls -a " + l.data,
		"cp ../operator.token ./stolen && cat ./stolen",
		"ln -s ../operator.token link && cat link",
		"cd .. && cat operator.token",
		"cat /proc/$PPID/environ",
		"cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ",
		"ls -l /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/fd/",
		"cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/cwd/operator.token",
		"cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/root" + filepath.Join(l.data, "operator.token"),
	} {
		out, res := l.run(t, Command{Command: cmd})
		if res.ExitCode == 0 || strings.Contains(out, "SECRET") || strings.Contains(out, "SQLite") {
			t.Errorf("%q: exit %d, output %q", cmd, res.ExitCode, out)
		}
	}
}

// Writes outside the workspace fail, however the command is spelled.
func TestWritesOutsideWorkspaceFail(t *testing.T) {
	l := newLayout(t)
	victim := filepath.Join(l.base, "victim")
	os.MkdirAll(filepath.Join(victim, "deep"), 0o700)
	os.WriteFile(filepath.Join(victim, "deep", "keep.txt"), []byte("keep"), 0o600)
	rm := "rm -rf " + victim
	b64 := base64(rm)
	for _, cmd := range []string{
		rm,
		"sh -c '" + rm + "'",
		`r""m -r\f ` + victim,
		`"$(printf '\162\155')" -rf ` + victim,
		"echo " + b64 + " | base64 -d | sh",
		"eval \"$(echo " + b64 + " | base64 -d)\"",
		"find " + victim + " -delete",
		"cd " + victim + " && rm -rf ./*",
		"echo pwned > " + filepath.Join(victim, "deep", "keep.txt"),
		"echo pwned > " + filepath.Join(l.base, "new.txt"),
		"echo pwned > /tmp/raven-sandbox-escape",
		"mv " + victim + " ./took",
		"bash -c 'rm -rf " + victim + "'",
		"perl -e 'unlink \"" + filepath.Join(victim, "deep", "keep.txt") + "\"'",
	} {
		l.run(t, Command{Command: cmd})
		b, err := os.ReadFile(filepath.Join(victim, "deep", "keep.txt"))
		if err != nil || string(b) != "keep" {
			t.Fatalf("%q damaged the victim: %q %v", cmd, b, err)
		}
	}
	for _, p := range []string{filepath.Join(l.base, "new.txt"), "/tmp/raven-sandbox-escape"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was written", p)
		}
	}
	// The workspace itself stays fully writable.
	os.WriteFile(filepath.Join(l.ws, "gone.txt"), []byte("x"), 0o600)
	if out, res := l.run(t, Command{Command: "rm -rf ./gone.txt && echo ok"}); res.ExitCode != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("workspace rm: %d %q", res.ExitCode, out)
	}
}

func base64(s string) string {
	const tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var b strings.Builder
	in := []byte(s)
	for len(in) > 0 {
		var n [3]byte
		k := copy(n[:], in)
		in = in[k:]
		v := uint(n[0])<<16 | uint(n[1])<<8 | uint(n[2])
		for i := 0; i < 4; i++ {
			if i <= k {
				b.WriteByte(tbl[(v>>(18-6*uint(i)))&63])
			} else {
				b.WriteByte('=')
			}
		}
	}
	return b.String()
}

func TestEnvironmentScrubbed(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/root",
		"OPENAI_API_KEY=sk-SECRET1", "ANTHROPIC_API_KEY=sk-SECRET2", "RAVEN_OPERATOR_TOKEN=SECRET3",
		"RAVEN_WEBHOOK_SECRET=SECRET4", "GITHUB_TOKEN=SECRET5", "AWS_SECRET_ACCESS_KEY=SECRET6",
		"DB_PASSWORD=SECRET7", "SOME_VENDOR_THING=SECRET8",
	}
	l := newLayout(t, parent...)
	out, _ := l.run(t, Command{Command: "env"})
	if strings.Contains(out, "SECRET") || strings.Contains(out, supervisorMarker) {
		t.Fatalf("env leaked:\n%s", out)
	}
	for _, want := range []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"} {
		if !strings.Contains(out, want) {
			t.Errorf("env lost %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "HOME=/root") {
		t.Errorf("HOME is the owner's home:\n%s", out)
	}
	if _, err := New(Options{Workspace: l.ws, DataDir: l.data, EnvAllow: []string{"OPENAI_API_KEY"}}); !errors.Is(err, ErrPolicy) {
		t.Fatalf("allow-listing a secret: %v", err)
	}
}

// Nothing the command starts outlives it, setsid and double forks included.
func TestDetachedChildrenDie(t *testing.T) {
	l := newLayout(t)
	cmds := []string{
		"setsid sh -c 'sleep 300 & echo $! > pid1' ; while [ ! -s pid1 ]; do :; done",
		"(setsid sleep 300 & echo $! > pid2) ; sh -c 'sh -c \"sleep 301 & echo \\$! > pid3\" &' ; while [ ! -s pid3 ]; do :; done",
		"nohup sleep 302 > /dev/null 2>&1 & echo $! > pid4; trap '' HUP",
	}
	for _, c := range cmds {
		_, res := l.run(t, Command{Command: c})
		if res.Killed == 0 {
			t.Errorf("%q: supervisor reports nothing killed", c)
		}
	}
	for _, f := range []string{"pid1", "pid2", "pid3", "pid4"} {
		b, err := os.ReadFile(filepath.Join(l.ws, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("%s: %q", f, b)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s: process %d survived the command (kill 0: %v)", f, pid, err)
		}
	}
}

// The command cannot kill its supervisor to orphan what it started.
func TestSupervisorCannotBeKilled(t *testing.T) {
	l := newLayout(t)
	if l.r.Mode().ABI < abiScoped {
		t.Skip("signal scoping needs Landlock ABI 6")
	}
	out, res := l.run(t, Command{Command: "setsid sleep 300 & echo $! > pid; kill -9 $PPID; echo still"})
	if !strings.Contains(out, "still") || res.Killed == 0 {
		t.Fatalf("%+v %q", res, out)
	}
	b, _ := os.ReadFile(filepath.Join(l.ws, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 1 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("pid %d survived", pid)
	}
}

func TestTimeoutKillsEverything(t *testing.T) {
	l := newLayout(t)
	start := time.Now()
	_, res := l.run(t, Command{Command: "setsid sleep 300 & sleep 300", Timeout: 200 * time.Millisecond})
	if !res.TimedOut || res.Killed == 0 {
		t.Fatalf("result %+v", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

func TestCancelKillsEverything(t *testing.T) {
	l := newLayout(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan Result, 1)
	go func() {
		res, _ := l.r.Run(ctx, Command{Command: "setsid sleep 300 & echo started; sleep 300", Stdout: out, Timeout: time.Minute})
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "started") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a real child process
	}
	cancel()
	select {
	case res := <-done:
		if !res.Canceled {
			t.Fatalf("result %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the run")
	}
}

// lockedBuffer is written by the runner's output copier while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With the network off, TCP and UDP to a loopback listener both fail; with
// it on, the same commands get through (so the test proves the sandbox).
func TestNetworkOff(t *testing.T) {
	l := newLayout(t)
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("bash needed for /dev/tcp")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	tcpPort := ln.Addr().(*net.TCPAddr).Port
	udpPort := uc.LocalAddr().(*net.UDPAddr).Port
	tcp := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED'", tcpPort)
	udp := fmt.Sprintf("bash -c 'echo DATAGRAM >/dev/udp/127.0.0.1/%d && echo SENT'", udpPort)
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	for _, c := range []string{tcp, udp, "curl -sS -m 5 http://127.0.0.1:" + strconv.Itoa(tcpPort) + "/"} {
		out, res := l.run(t, Command{Command: c})
		if res.ExitCode == 0 || strings.Contains(out, "CONNECTED") || strings.Contains(out, "SENT") {
			t.Errorf("network off: %q got through: %d %q", c, res.ExitCode, out)
		}
	}
	uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, _, err := uc.ReadFrom(make([]byte, 64)); err == nil {
		t.Error("a datagram arrived with the network off")
	}
	select {
	case <-accepted:
		t.Error("a TCP connection arrived with the network off")
	default:
	}
	out, res := l.run(t, Command{Command: tcp, Network: true})
	if res.ExitCode != 0 || !strings.Contains(out, "CONNECTED") {
		t.Fatalf("network on: tcp failed: %d %q", res.ExitCode, out)
	}
	out, res = l.run(t, Command{Command: udp, Network: true})
	if res.ExitCode != 0 || !strings.Contains(out, "SENT") {
		t.Fatalf("network on: udp failed: %d %q", res.ExitCode, out)
	}
}

func TestGrantsNeverExposeDataDir(t *testing.T) {
	l := newLayout(t)
	for _, p := range []string{"/", l.base, l.data, filepath.Join(l.data, "sub")} {
		os.MkdirAll(p, 0o700)
		if err := l.r.CheckGrant(p); !errors.Is(err, ErrPolicy) {
			t.Errorf("grant %s: %v", p, err)
		}
		if _, err := l.r.Run(context.Background(), Command{Command: "true", ReadWrite: []string{p}}); !errors.Is(err, ErrPolicy) {
			t.Errorf("run with %s: %v", p, err)
		}
	}
	other := filepath.Join(l.base, "other")
	os.Mkdir(other, 0o700)
	if out, res := l.run(t, Command{Command: "echo granted > " + filepath.Join(other, "f") + " && echo ok", ReadWrite: []string{other}}); res.ExitCode != 0 {
		t.Fatalf("granted path not writable: %q", out)
	}
	if _, err := New(Options{Workspace: l.base, DataDir: l.data}); !errors.Is(err, ErrPolicy) {
		t.Fatalf("workspace containing the data dir: %v", err)
	}
}

func TestUnavailableModeRefuses(t *testing.T) {
	none := Mode{Kind: KindNone, Reason: "test"}
	r, err := New(Options{Workspace: t.TempDir(), DataDir: t.TempDir(), Mode: &none})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("New: %v", err)
	}
	if _, err := r.Run(context.Background(), Command{Command: "true"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Run: %v", err)
	}
}

// Where Landlock cannot confine unix sockets by path, they are refused, so
// a command cannot reach the gateway's control socket (or a docker socket)
// outside the sandbox.
func TestUnixSocketOutsideUnreachable(t *testing.T) {
	l := newLayout(t)
	sock := filepath.Join(l.data, "raven.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	for _, network := range []bool{false, true} {
		out, _ := l.run(t, Command{Command: "curl -sS -m 3 --unix-socket " + sock + " http://x/ ; echo rc=$?", Network: network})
		if strings.Contains(out, "rc=0") || !strings.Contains(out, "rc=") {
			t.Errorf("network=%v: %q", network, out)
		}
	}
	select {
	case <-accepted:
		t.Fatal("the control socket accepted a sandboxed connection")
	default:
	}
}

// kill -9 of the raven process mid-command still ends everything the
// command started: the supervisor gets SIGTERM as its parent-death signal.
func TestRavenKilledMidCommand(t *testing.T) {
	l := newLayout(t)
	cmd := exec.Command(os.Args[0], l.data, "setsid sleep 300 & echo $! > pid; sleep 300")
	cmd.Env = append(os.Environ(), runnerEnv+"="+l.ws)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(l.ws, "pid")
	deadline := time.Now().Add(10 * time.Second)
	var pid int
	for time.Now().Before(deadline) && pid == 0 {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(5 * time.Millisecond) // polling a real child process
	}
	if pid <= 1 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("command did not start")
	}
	cmd.Process.Kill()
	cmd.Wait()
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a real child process
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("sleep %d outlived a killed raven", pid)
}

// A binary re-executed as supervisor without the entry point (a test binary
// missing the TestMain hook) cannot nest sandboxes recursively.
func TestNoNestedRunner(t *testing.T) {
	t.Setenv(supervisorMarker, "1")
	if _, err := New(Options{Workspace: t.TempDir(), DataDir: t.TempDir()}); !errors.Is(err, ErrSetup) {
		t.Fatalf("nested New: %v", err)
	}
}
