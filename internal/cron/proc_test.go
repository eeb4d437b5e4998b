package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// The tests in this file run the real raven binary as child processes.

var (
	buildOnce sync.Once
	ravenBin  string
	buildErr  error
	buildDir  string
)

// raven builds the binary with -tags testhooks: the RAVEN_CRON_TEST_BLOCK_DIR
// hook exists only in such builds.
func raven(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "raven-cron-test-")
		if buildErr != nil {
			return
		}
		ravenBin = filepath.Join(buildDir, "raven")
		build := exec.Command("go", "build", "-tags", "testhooks", "-o", ravenBin, "github.com/raven-agent/raven/cmd/raven")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as shipped (see README)
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return ravenBin
}

type dataDir struct {
	t    *testing.T
	root string
}

func newDataDir(t *testing.T, cronCfg map[string]any) *dataDir {
	d := &dataDir{t: t, root: t.TempDir()}
	cfg, _ := json.Marshal(map[string]any{"cron": cronCfg, "log": map[string]any{"level": "warn", "format": "text"}})
	if err := os.WriteFile(filepath.Join(d.root, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *dataDir) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, raven(d.t), append([]string{"--data-dir", d.root}, args...)...)
	c.Env = append(os.Environ(), "RAVEN_MODEL=")
	return c
}

func (d *dataDir) store() *Store {
	return NewStore(filepath.Join(d.root, "cron", "jobs.json"), clock.Real(), nil, 10*time.Second)
}

func (d *dataDir) runs() []Run {
	var out []Run
	if err := NewRunLog(filepath.Join(d.root, "cron", "runs.jsonl")).All(func(r Run) { out = append(out, r) }); err != nil {
		d.t.Fatal(err)
	}
	return out
}

type child struct {
	cmd    *exec.Cmd
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

func (d *dataDir) serve(env ...string) *child {
	d.t.Helper()
	c := d.cmd(context.Background(), "cron", "serve")
	c.Env = append(c.Env, env...)
	ch := &child{cmd: c, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	c.Stdout, c.Stderr = ch.stdout, ch.stderr
	if err := c.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	return ch
}

func (ch *child) stop(t *testing.T) {
	t.Helper()
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if err := ch.cmd.Wait(); err != nil {
		t.Fatalf("serve exited: %v\nstderr:\n%s", err, ch.stderr)
	}
}

// eventually polls cond: the processes under test run on the wall clock.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestThreeServicesFireEachJobExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s multi-process test")
	}
	const (
		jobs = 50
		run  = 20 * time.Second
	)
	raven(t)
	d := newDataDir(t, map[string]any{"max_concurrent": 64, "decay_after": 0})
	st := d.store()
	// Anchor the jobs 2 s ahead so the first fire is not due before the
	// three processes have started: lateness then measures the service,
	// not process start-up.
	now := time.Now().Add(2 * time.Second)
	ids := map[string]bool{}
	for i := 0; i < jobs; i++ {
		j, err := NewJob(Spec{Name: fmt.Sprintf("job-%d", i), Message: fmt.Sprintf("tick %d", i), Every: "1s", Deliver: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		if j, err = st.Add(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}
	raven(t)
	var kids []*child
	for i := 0; i < 3; i++ {
		kids = append(kids, d.serve())
	}
	time.Sleep(run) // load duration, not a wait for a behaviour
	lines := 0
	for _, k := range kids {
		k.stop(t)
		lines += strings.Count(k.stdout.String(), "[cron ")
	}
	runs := d.runs()
	type key struct {
		id string
		at int64
	}
	seen := map[key]bool{}
	perJob := map[string][]time.Time{}
	pids := map[int]int{}
	var late []time.Duration
	for _, r := range runs {
		k := key{r.JobID, r.ScheduledAt.UnixNano()}
		if seen[k] {
			t.Errorf("job %s scheduled %s fired twice", r.JobID, r.ScheduledAt)
		}
		seen[k] = true
		if !ids[r.JobID] {
			t.Errorf("unknown job %s", r.JobID)
		}
		if r.Outcome != StatusDelivered {
			t.Errorf("run %+v", r)
		}
		perJob[r.JobID] = append(perJob[r.JobID], r.ScheduledAt)
		pids[r.PID]++
		late = append(late, r.FiredAt.Sub(r.ScheduledAt))
	}
	if lines != len(runs) {
		t.Errorf("stdout lines %d != runs %d", lines, len(runs))
	}
	// No lost fire: each job's scheduled times are consecutive seconds.
	gaps := 0
	for id := range ids {
		ts := perJob[id]
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if len(ts) < int(run/time.Second)-4 {
			t.Errorf("job %s fired %d times in %s", id, len(ts), run)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i].Sub(ts[i-1]) == time.Second {
				continue
			}
			// A fire more than a period late is skipped by design (no
			// backlog). Under the race detector on a shared 2-core machine
			// a service can stall past a second: a gap is then the design
			// at work, counted; without it, it is a lost fire.
			if raceEnabled {
				gaps++
				continue
			}
			t.Errorf("job %s: gap between %s and %s", id, ts[i-1], ts[i])
		}
	}
	if gaps > 0 {
		t.Logf("%d skipped seconds across the jobs (a service ran over a second late under -race)", gaps)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	pct := func(p float64) time.Duration { return late[int(p*float64(len(late)-1))] }
	t.Logf("3 processes, %d jobs every 1s, %s: %d fires (by pid %v); lateness p50=%s p99=%s max=%s",
		jobs, run, len(runs), pids, pct(0.5), pct(0.99), late[len(late)-1])
	// Exactly-once above is the contract; lateness is a figure, held only
	// where timings mean something (the race detector slows every process
	// several-fold on a shared 2-core machine).
	if bound := 250 * time.Millisecond; pct(0.99) > bound && !raceEnabled {
		t.Errorf("p99 lateness %s, want under %s", pct(0.99), bound)
	}
}

// A cron serve killed -9 mid-fire leaves its claim behind. A peer on the
// same host sees the claimant's pid is gone and takes the fire over at
// once, not after the stale-claim TTL — and fires it exactly once.
func TestKilledClaimantIsReclaimedAtOnce(t *testing.T) {
	const ttl = 15 * time.Minute
	d := newDataDir(t, map[string]any{"claim_ttl": ttl.String(), "job_timeout": "2s", "decay_after": 0})
	raven(t)
	j, err := NewJob(Spec{Name: "once", Message: "wake up", At: time.Now().Add(2 * time.Second).Format(time.RFC3339), Deliver: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = d.store().Add(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	hook := t.TempDir()
	a := d.serve("RAVEN_CRON_TEST_BLOCK_DIR=" + hook)
	marker := filepath.Join(hook, fmt.Sprintf("fired-%s-%d", j.ID, a.cmd.Process.Pid))
	eventually(t, 10*time.Second, "the first service to start the fire", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	got, err := d.store().Get(context.Background(), j.ID)
	if err != nil || got.Claim == nil || got.Claim.PID != a.cmd.Process.Pid {
		t.Fatalf("claim after kill -9: %+v (err %v)", got.Claim, err)
	}
	claimedAt, sched := got.Claim.ClaimedAt, got.Claim.ScheduledAt

	b := d.serve()
	eventually(t, 15*time.Second, "the takeover fire", func() bool { return len(d.runs()) > 0 })
	time.Sleep(1500 * time.Millisecond) // room for a wrong second fire to show up
	b.stop(t)
	runs := d.runs()
	if len(runs) != 1 {
		t.Fatalf("runs = %+v, want exactly one", runs)
	}
	r := runs[0]
	if r.PID != b.cmd.Process.Pid || !r.ScheduledAt.Equal(sched) || r.Outcome != StatusDelivered {
		t.Fatalf("run = %+v", r)
	}
	t.Logf("dead claimant's fire taken over %s after its claim (TTL %s)", r.FiredAt.Sub(claimedAt), ttl)
	if out := b.stdout.String(); out != fmt.Sprintf("[cron %s] wake up\n", j.ID) {
		t.Fatalf("stdout = %q", out)
	}
	final, _ := d.store().Get(context.Background(), j.ID)
	if final.Claim != nil || final.Enabled {
		t.Fatalf("job after takeover = %+v", final)
	}
}

func TestConcurrentCLIAddsWhileServing(t *testing.T) {
	d := newDataDir(t, map[string]any{"lock_timeout": "20s"})
	raven(t)
	srv := d.serve()
	const n = 100
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]bool{}
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := d.cmd(context.Background(), "cron", "add", "--name", fmt.Sprintf("n%d", i), "--message", "m",
				"--every", "1h", "--deliver").Output()
			if err != nil {
				t.Errorf("add %d: %v", i, err)
				return
			}
			mu.Lock()
			ids[strings.TrimSpace(string(out))] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	srv.stop(t)
	out, err := d.cmd(context.Background(), "cron", "list", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	if err := json.Unmarshal(out, &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n || len(ids) != n {
		t.Fatalf("jobs = %d, distinct ids printed = %d, want %d", len(jobs), len(ids), n)
	}
	for _, j := range jobs {
		if !ids[j.ID] {
			t.Fatalf("job %s not printed by any add", j.ID)
		}
	}
}

func TestCLIBadInputExits2AndWritesNothing(t *testing.T) {
	d := newDataDir(t, nil)
	raven(t)
	base := []string{"cron", "add", "--name", "n", "--message", "m"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"invalid expression", []string{"--cron", "0 25 * * *"}, "invalid cron expression"},
		{"unknown timezone", []string{"--cron", "0 9 * * *", "--tz", "Europe/Atlantis"}, "unknown timezone"},
		{"at in the past", []string{"--at", "2001-01-01T00:00:00Z"}, "in the past"},
		{"every below 1s", []string{"--every", "900ms"}, "below 1s"},
		{"unknown channel", []string{"--every", "1m", "--channel", "pager"}, "unknown channel"},
		{"broadcast with silent", []string{"--every", "1m", "--broadcast", "--silent"}, "exclude"},
		{"no schedule", nil, "exactly one"},
		{"two schedules", []string{"--every", "1m", "--at", "2099-01-01T00:00:00Z"}, "exactly one"},
		{"unknown flag", []string{"--every", "1m", "--when", "x"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := d.cmd(context.Background(), append(base, tt.args...)...)
			var stderr bytes.Buffer
			c.Stderr = &stderr
			err := c.Run()
			if c.ProcessState.ExitCode() != 2 {
				t.Fatalf("exit %d (%v), stderr %q", c.ProcessState.ExitCode(), err, stderr.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Fatalf("stderr = %q, want one line with %q", msg, tt.want)
			}
			if _, err := os.Stat(filepath.Join(d.root, "cron", "jobs.json")); !os.IsNotExist(err) {
				t.Fatalf("jobs.json written: %v", err)
			}
		})
	}
	for _, args := range [][]string{{"cron", "remove", "nope"}, {"cron", "serve", "--channels", "pager"}, {"cron", "runs", "--last", "0"}} {
		c := d.cmd(context.Background(), args...)
		if c.Run(); c.ProcessState.ExitCode() != 2 {
			t.Errorf("%v: exit %d, want 2", args, c.ProcessState.ExitCode())
		}
	}
}

func TestCLIRunWithoutServiceFiresInProcess(t *testing.T) {
	d := newDataDir(t, nil)
	raven(t)
	out, err := d.cmd(context.Background(), "cron", "add", "--name", "n", "--message", "hello", "--every", "1h", "--deliver").Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	out, err = d.cmd(context.Background(), "cron", "run", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("[cron %s] hello\nfired %s: delivered\n", id, id); string(out) != want {
		t.Fatalf("out = %q, want %q", out, want)
	}
	out, err = d.cmd(context.Background(), "cron", "runs", id, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var runs []Run
	if err := json.Unmarshal(out, &runs); err != nil || len(runs) != 1 || !runs[0].Forced {
		t.Fatalf("runs = %s (%v)", out, err)
	}
}
