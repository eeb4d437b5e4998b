package wake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

const (
	triggerChildEnv = "RAVEN_WAKE_TRIGGER_CHILD"
	childPathEnv    = "RAVEN_WAKE_TRIGGER_PATH"
	childCountEnv   = "RAVEN_WAKE_TRIGGER_COUNT"
)

// runTriggerChild is the body of a re-executed test binary.
//   - "producer": Add COUNT triggers, print nothing.
//   - "consumer": Drain in a loop, printing each consumed ID on its own
//     line, until the stop file exists and a drain after seeing it is empty.
func runTriggerChild(role string) int {
	path := os.Getenv(childPathEnv)
	st := NewTriggerStore(path, clock.Real(), nil)
	ctx := context.Background()
	switch role {
	case "producer":
		n, _ := strconv.Atoi(os.Getenv(childCountEnv))
		for i := range n {
			if _, err := st.Add(ctx, TriggerHeartbeat, fmt.Sprintf("p%d-%d", os.Getpid(), i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	case "consumer":
		out := bufio.NewWriter(os.Stdout)
		defer out.Flush()
		stopSeen := false
		for {
			if _, err := os.Stat(path + ".stop"); err == nil {
				stopSeen = true
			}
			ts, err := st.Drain(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			for _, t := range ts {
				fmt.Fprintln(out, t.ID)
			}
			if stopSeen && len(ts) == 0 {
				return 0
			}
			// The drain cadence of a real consumer, not a wait for behaviour.
			_ = clock.Sleep(ctx, clock.Real(), time.Millisecond)
		}
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 2
}

func childCmd(t *testing.T, role, path string, count int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), triggerChildEnv+"="+role, childPathEnv+"="+path, childCountEnv+"="+strconv.Itoa(count))
	return cmd
}

func TestTriggersTwoProcessesConsumeExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	path := filepath.Join(t.TempDir(), "sentinel", "triggers.json")
	const producers, perProducer = 2, 60

	var outs [2]bytes.Buffer
	var consumers []*exec.Cmd
	for i := range 2 {
		c := childCmd(t, "consumer", path, 0)
		c.Stdout = &outs[i]
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, c)
	}
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := childCmd(t, "producer", path, perProducer)
			if out, err := c.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("producer: %v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := os.WriteFile(path+".stop", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range consumers {
		if err := c.Wait(); err != nil {
			t.Fatalf("consumer: %v", err)
		}
	}
	seen := map[string]int{}
	for i := range outs {
		for _, id := range strings.Fields(outs[i].String()) {
			seen[id]++
		}
	}
	if len(seen) != producers*perProducer {
		t.Fatalf("consumed %d distinct triggers, want %d", len(seen), producers*perProducer)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("trigger %s consumed %d times", id, n)
		}
	}
	left, err := NewTriggerStore(path, nil, nil).Pending(context.Background())
	if err != nil || len(left) != 0 {
		t.Fatalf("left %d, %v", len(left), err)
	}
	t.Logf("consumer split: %d / %d", len(strings.Fields(outs[0].String())), len(strings.Fields(outs[1].String())))
}

func TestTriggerAddDrain(t *testing.T) {
	clk := clock.NewFake(t0)
	st := NewTriggerStore(filepath.Join(t.TempDir(), "triggers.json"), clk, nil)
	ctx := context.Background()
	a, err := st.Add(ctx, TriggerHeartbeat, "  manual  ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(ctx, TriggerDiscovery, ""); err != nil {
		t.Fatal(err)
	}
	if a.Reason != "manual" || !a.CreatedAt.Equal(t0) || a.PID != os.Getpid() || !strings.HasPrefix(a.ID, "trg_") {
		t.Fatalf("trigger %+v", a)
	}
	pend, err := st.Pending(ctx)
	if err != nil || len(pend) != 2 {
		t.Fatalf("pending %d %v", len(pend), err)
	}
	got, err := st.Drain(ctx)
	if err != nil || len(got) != 2 || got[0].ID != a.ID || got[1].Kind != TriggerDiscovery {
		t.Fatalf("drain %+v %v", got, err)
	}
	got, err = st.Drain(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("second drain %+v %v", got, err)
	}
}

func TestTriggerAddBadInput(t *testing.T) {
	st := NewTriggerStore(filepath.Join(t.TempDir(), "triggers.json"), nil, nil)
	tests := []struct {
		name   string
		kind   TriggerKind
		reason string
	}{
		{"unknown kind", "reboot", ""},
		{"empty kind", "", ""},
		{"reason too long", TriggerTick, strings.Repeat("x", MaxTriggerReason+1)},
		{"multi-line reason", TriggerTick, "a\nb"},
		{"invalid utf8", TriggerTick, "\xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.Add(context.Background(), tc.kind, tc.reason)
			var te *TriggerError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *TriggerError", err)
			}
		})
	}
	if _, err := os.Stat(st.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bad input wrote the file: %v", err)
	}
}

func TestTriggerAddBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	f := triggersFile{Version: 1, Triggers: make([]Trigger, MaxPendingTriggers-1)}
	for i := range f.Triggers {
		f.Triggers[i] = Trigger{ID: fmt.Sprint(i), Kind: TriggerTick}
	}
	raw, _ := json.Marshal(f)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st := NewTriggerStore(path, nil, nil)
	if _, err := st.Add(context.Background(), TriggerTick, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(context.Background(), TriggerTick, ""); !errors.Is(err, ErrTooManyTriggers) {
		t.Fatalf("err = %v", err)
	}
}

func TestTriggerCorruptMovedAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		op      string
	}{
		{"garbage on drain", "{not json", "drain"},
		{"garbage on add", "[1,2", "add"},
		{"wrong shape", `{"version":1,"triggers":{"a":1}}`, "drain"},
		{"missing version", `{"triggers":[]}`, "add"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "triggers.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			st := NewTriggerStore(path, clock.NewFake(t0), nil)
			var err error
			if tc.op == "drain" {
				_, err = st.Drain(context.Background())
			} else {
				_, err = st.Add(context.Background(), TriggerHeartbeat, "x")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CorruptError", err)
			}
			kept, rerr := os.ReadFile(ce.MovedTo)
			if rerr != nil || string(kept) != tc.content {
				t.Fatalf("moved-aside content %q, %v", kept, rerr)
			}
			if !strings.HasPrefix(filepath.Base(ce.MovedTo), "triggers.json.corrupt-") {
				t.Fatalf("moved to %s", ce.MovedTo)
			}
			// The next call starts fresh.
			if _, err := st.Add(context.Background(), TriggerHeartbeat, "x"); err != nil {
				t.Fatalf("add after corrupt: %v", err)
			}
		})
	}
}

func TestTriggerNewerVersionLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "triggers.json")
	content := `{"version":9,"triggers":[]}`
	os.WriteFile(path, []byte(content), 0o600)
	st := NewTriggerStore(path, nil, nil)
	if _, err := st.Add(context.Background(), TriggerTick, ""); err == nil || !strings.Contains(err.Error(), "schema version 9") {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != content {
		t.Fatalf("file changed: %s", got)
	}
}

func TestConsumeLoop(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "triggers.json")
	st := NewTriggerStore(path, clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Trigger, 10)
	done := make(chan error, 1)
	go func() {
		done <- st.Consume(ctx, 2*time.Second, func(_ context.Context, tr Trigger) { got <- tr })
	}()
	clk.BlockUntil(1) // first drain done, sleeping
	// A foreign unknown kind in the file is dropped, a known one delivered.
	raw, _ := json.Marshal(triggersFile{Version: 1, Triggers: []Trigger{{ID: "x", Kind: "future"}, {ID: "y", Kind: TriggerHeartbeat}}})
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	select {
	case tr := <-got:
		if tr.ID != "y" {
			t.Fatalf("got %+v", tr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("trigger not consumed")
	}
	clk.BlockUntil(1)
	if len(got) != 0 {
		t.Fatalf("unexpected extra trigger")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
