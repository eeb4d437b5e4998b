package policy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/statefile"
)

const childEnv = "RAVEN_POLICY_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

func roomyConfig() Config {
	cfg := DefaultConfig()
	cfg.Location = time.UTC
	cfg.QuietHours = DayWindow{}
	cfg.LearnedDND = false
	cfg.DayQuota, cfg.HourQuota = 1_000_000, 1_000_000
	cfg.TopicHourQuota, cfg.TopicDayQuota, cfg.TopicWeekQuota = 1_000_000, 1_000_000, 1_000_000
	cfg.SessionCooldown = 0
	return cfg
}

// runChild is a second raven process: spec "path|name|count" records count
// fires, each checked first, through a Store on path.
func runChild(spec string) int {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	st, err := statefile.Open(parts[0], statefile.Options{LockTimeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := New(roomyConfig(), Options{Store: st})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := 0; i < n; i++ {
		req := nudge(parts[1], fmt.Sprintf("%s-%d", parts[1], i), fmt.Sprintf("message %s %d", parts[1], i))
		if v := p.Check(context.Background(), req); !v.Allow {
			fmt.Fprintln(os.Stderr, "denied:", v)
			return 3
		}
		if _, err := p.RecordFired(context.Background(), req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 4
		}
	}
	return 0
}

func TestTwoProcessesShareState(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "sentinel", "state.json")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const perChild = 40
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, name := range []string{"gateway", "chat"} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", childEnv, path, name, perChild))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, outs[i])
		}
	}
	st, _ := statefile.Open(path, statefile.Options{})
	p, err := New(roomyConfig(), Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	p.SnapshotState() // hydrate
	total := 0
	for _, h := range p.FireHistory() {
		total += h.FiresLastWeek
	}
	if total != 2*perChild {
		t.Fatalf("lost fires: %d of %d", total, 2*perChild)
	}
	// A peer's fire is visible to this process's Check.
	if v := p.Check(context.Background(), nudge("x", "", "message chat 7")); v.Layer != LayerDedup {
		t.Fatalf("peer fire not seen: %+v", v)
	}
}
