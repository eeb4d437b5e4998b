package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// TestFigures measures process start-up and memory of the real binary:
// `raven version`, `raven chat -m` (scripted), and an idle `raven gateway`
// (start-up to ready, RSS, control-API round trip). It logs the numbers
// (go test -run TestFigures -v ./internal/gateway) and fails only when a
// process misbehaves, never on a missed goal: the machine is shared.
func TestFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("figures: skipped under -short")
	}
	if raceEnabled {
		t.Skip("figures: the race detector's instrumentation would be measured, not Raven")
	}
	const runs = 10
	bin := ravenBin(t)
	dir := t.TempDir()
	model := writeScript(t, scriptReply("ok"))

	measure := func(name string, args ...string) {
		t.Helper()
		var walls []time.Duration
		var rss []int64
		for range runs {
			wall, maxRSS := runMeasured(t, bin, append([]string{"--data-dir", dir}, args...)...)
			walls, rss = append(walls, wall), append(rss, maxRSS)
		}
		t.Logf("%-28s wall p50 %6.1f ms  min %6.1f ms  max %6.1f ms | max RSS p50 %5.1f MB  max %5.1f MB  (goal < 30 ms, < 20 MB)",
			name, ms(median(walls)), ms(slices.Min(walls)), ms(slices.Max(walls)), mb(median(rss)), mb(slices.Max(rss)))
	}
	measure("raven version", "version")
	// The first chat creates raven.db and runs every migration; later ones
	// open an existing database, which is the everyday case.
	wall, rss := runMeasured(t, bin, "--data-dir", t.TempDir(), "--model", model, "chat", "-m", "hi")
	t.Logf("%-28s wall %6.1f ms  max RSS %5.1f MB", "raven chat -m (new data dir)", ms(wall), mb(rss))
	measure("raven chat -m (scripted)", "--model", model, "chat", "-m", "hi")

	// A first start creates raven.db and runs every migration.
	gw := startGateway(t, t.TempDir(), model)
	coldSocket := gw.waitSocket(t)
	gw.waitReady(t)
	t.Logf("%-28s startup= %6.1f ms | exec→socket accepts %6.1f ms", "raven gateway (new data dir)", ms(gw.readyStartup(t)), ms(coldSocket))
	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}

	var readies, sockets []time.Duration
	var idle, hwm, anon []int64
	var p50s, p99s []time.Duration
	for range 5 {
		gw := startGateway(t, dir, model)
		sockets = append(sockets, gw.waitSocket(t))
		gw.waitReady(t)
		readies = append(readies, gw.readyStartup(t))
		c := gw.dial(t)
		// Idle means after start-up settled: a short pause, then read RSS.
		time.Sleep(300 * time.Millisecond)
		st := procStatus(t, gw.cmd.Process.Pid)
		idle, hwm, anon = append(idle, st["VmRSS"]), append(hwm, st["VmHWM"]), append(anon, st["RssAnon"])

		lat := make([]time.Duration, 0, 2000)
		for range cap(lat) {
			start := time.Now()
			call(t, c, api.Ping, api.Empty{})
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		p50s, p99s = append(p50s, lat[len(lat)/2]), append(p99s, lat[len(lat)*99/100])
		c.Close()
		if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
			t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
		}
	}
	t.Logf("%-28s startup= p50 %6.1f ms  min %6.1f ms | exec→socket accepts p50 %6.1f ms  min %6.1f ms  (goal < 50 ms)",
		"raven gateway ready", ms(median(readies)), ms(slices.Min(readies)), ms(median(sockets)), ms(slices.Min(sockets)))
	t.Logf("%-28s VmRSS p50 %5.1f MB  max %5.1f MB | VmHWM p50 %5.1f MB | RssAnon p50 %5.1f MB  (goal < 20 MB)",
		"raven gateway idle", mb(median(idle)), mb(slices.Max(idle)), mb(median(hwm)), mb(median(anon)))
	t.Logf("%-28s p50 %6.1f µs  p99 %6.1f µs (median of 5 gateways × 2000 pings; goal p99 < 1 ms)",
		"control API ping round trip", us(median(p50s)), us(median(p99s)))
}

// runMeasured runs bin to completion and returns its wall time (fork to
// reaped) and peak RSS in KiB from the kernel's rusage.
func runMeasured(t *testing.T, bin string, args ...string) (time.Duration, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("raven %v: %v\n%s", args, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage on this platform")
	}
	return wall, ru.Maxrss // KiB on Linux
}

// waitSocket polls until the control socket accepts a connection and
// returns the time since exec: the start-up a client experiences.
func (g *gatewayProc) waitSocket(t *testing.T) time.Duration {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if nc, err := net.DialTimeout("unix", g.socket(), time.Second); err == nil {
			took := time.Since(g.started)
			nc.Close()
			return took
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket not accepting within 15s\n%s", g.log.String())
		}
		time.Sleep(500 * time.Microsecond) // fine polling: this is what is measured
	}
}

var startupRE = regexp.MustCompile(`msg="gateway ready".* startup=(\S+)`)

// readyStartup is the gateway's own start-up figure from its ready log line.
func (g *gatewayProc) readyStartup(t *testing.T) time.Duration {
	t.Helper()
	// The socket accepts a moment before the ready line is logged.
	var m []string
	eventually(t, "the gateway ready line", func() bool {
		m = startupRE.FindStringSubmatch(g.log.String())
		return m != nil
	})
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("startup=%s: %v", m[1], err)
	}
	return d
}

// procStatus reads the kB-valued fields of /proc/<pid>/status.
func procStatus(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	st := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			st[k] = n
		}
	}
	return st
}

func median[T int64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func mb(kib int64) float64       { return float64(kib) / 1024 }
