package executor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/statefile"
)

// childEnv selects a child role: "role|arg|arg…". The children are real
// raven-like processes (this test binary re-executed), each with its own
// Store on the same state.json.
const childEnv = "RAVEN_EXECUTOR_CHILD"

var childSessions = []string{"telegram:1", "telegram:2", "webhook:9"}

func runChild(spec string) int {
	parts := strings.Split(spec, "|")
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	st, err := statefile.Open(parts[1], statefile.Options{LockTimeout: time.Minute})
	if err != nil {
		return fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	ctx := context.Background()
	switch parts[0] {
	case "inject": // path|queueN|doneMarker
		n, _ := strconv.Atoi(parts[2])
		marker := parts[3]
		in, err := NewInjector(InjectorOptions{Store: st, TTL: 24 * time.Hour, Cap: 100_000,
			OnDelivered: func(_ context.Context, d Delivery) { fmt.Fprintf(out, "D %s %s\n", d.Session, d.Content) }})
		if err != nil {
			return fail(err)
		}
		consume := func(i int) {
			s := childSessions[i%len(childSessions)]
			in.Modify(s, "reply")
			in.Settle(s, true)
		}
		for i := range n {
			s := childSessions[i%len(childSessions)]
			if r := in.Queue(ctx, Nudge{Session: s, Message: fmt.Sprintf("inject-%d", i)}); !r.Queued {
				return fail(fmt.Errorf("queue %d: %+v", i, r))
			}
			consume(i + 1)
		}
		if n > 0 {
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				return fail(err)
			}
		}
		for i := 0; ; i++ {
			consume(i)
			if _, err := os.Stat(marker); err != nil {
				continue // the queuer is still queuing
			}
			pending, err := in.Pending(ctx)
			if err != nil {
				return fail(err)
			}
			if len(pending) == 0 {
				return 0
			}
		}
	case "defer-register": // path|count|unixNow
		n, _ := strconv.Atoi(parts[2])
		sec, _ := strconv.ParseInt(parts[3], 10, 64)
		m, err := NewDeferManager(DeferOptions{Store: st, Clock: clock.NewFake(time.Unix(sec, 0)),
			Dispatch: func(context.Context, Nudge) Result { return Result{Error: "register only"} }})
		if err != nil {
			return fail(err)
		}
		prios := []policy.Priority{policy.PriorityLow, policy.PriorityMedium, policy.PriorityHigh}
		for i := range n {
			r := m.Register(ctx, Nudge{Session: "telegram:1", Message: fmt.Sprintf("defer-%d", i), Priority: prios[i%3]}, "after the thread")
			if !r.Queued {
				return fail(fmt.Errorf("register %d: %+v", i, r))
			}
		}
		return 0
	case "defer-poll": // path|unixNow
		sec, _ := strconv.ParseInt(parts[2], 10, 64)
		m, err := NewDeferManager(DeferOptions{Store: st, Clock: clock.NewFake(time.Unix(sec, 0)),
			Dispatch: func(_ context.Context, n Nudge) Result {
				fmt.Fprintf(out, "D %s %s\n", n.Priority, n.Message)
				return Result{Delivered: true}
			}})
		if err != nil {
			return fail(err)
		}
		m.Poll(ctx)
		return 0
	}
	return fail(errors.New("unknown role " + parts[0]))
}

type child struct {
	cmd *exec.Cmd
	out bytes.Buffer
	err bytes.Buffer
}

func startChild(t *testing.T, spec string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), childEnv+"="+spec)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.err
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *child) wait(t *testing.T) []string {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child %v: %v\n%s", c.cmd.Env[len(c.cmd.Env)-1], err, c.err.String())
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(c.out.String()), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// One process queues N injects while it and a peer consume them through
// Modify, concurrently, each with its own Store: every inject is delivered
// exactly once in total, to its own session, none lost.
func TestTwoProcessesInjectExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sentinel", "state.json")
	marker := filepath.Join(dir, "queued")
	const n = 120
	queuer := startChild(t, fmt.Sprintf("inject|%s|%d|%s", path, n, marker))
	peer := startChild(t, fmt.Sprintf("inject|%s|0|%s", path, marker))
	a, b := queuer.wait(t), peer.wait(t)
	seen := map[string]int{}
	for _, l := range append(append([]string(nil), a...), b...) {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "D" {
			t.Fatalf("bad line %q", l)
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(f[2], "inject-"))
		if f[1] != childSessions[i%len(childSessions)] {
			t.Fatalf("%s delivered in the wrong session %s", f[2], f[1])
		}
		seen[f[2]]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("inject-%d", i)]; c != 1 {
			t.Fatalf("inject-%d delivered %d times (queuer %d lines, peer %d lines)", i, c, len(a), len(b))
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct deliveries", len(seen))
	}
	t.Logf("queuer delivered %d, peer delivered %d", len(a), len(b))
}

// A defer heap registered by one process survives it: two new processes
// poll it concurrently after the session settled and deliver every entry
// exactly once, each in priority order; a third finds the heap empty.
func TestDeferHeapSurvivesRestartAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "sentinel", "state.json")
	reg := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC).Unix()
	const n = 30
	startChild(t, fmt.Sprintf("defer-register|%s|%d|%d", path, n, reg)).wait(t)

	// Before the idle threshold nothing goes out.
	if early := startChild(t, fmt.Sprintf("defer-poll|%s|%d", path, reg+60)).wait(t); len(early) != 0 {
		t.Fatalf("dispatched before the session settled: %v", early)
	}
	settled := reg + int64((20 * time.Minute).Seconds())
	p1 := startChild(t, fmt.Sprintf("defer-poll|%s|%d", path, settled))
	p2 := startChild(t, fmt.Sprintf("defer-poll|%s|%d", path, settled))
	l1, l2 := p1.wait(t), p2.wait(t)
	seen := map[string]int{}
	for _, lines := range [][]string{l1, l2} {
		var ranks []int
		for _, l := range lines {
			f := strings.Fields(l)
			seen[f[2]]++
			ranks = append(ranks, rank(policy.Priority(f[1])))
		}
		if !sort.SliceIsSorted(ranks, func(i, j int) bool { return ranks[i] > ranks[j] }) {
			t.Fatalf("not in priority order: %v", lines)
		}
	}
	for i := range n {
		if c := seen[fmt.Sprintf("defer-%d", i)]; c != 1 {
			t.Fatalf("defer-%d delivered %d times", i, c)
		}
	}
	if rest := startChild(t, fmt.Sprintf("defer-poll|%s|%d", path, settled+60)).wait(t); len(rest) != 0 {
		t.Fatalf("heap not emptied: %v", rest)
	}
}
