//go:build reliability

package reliability

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writerKind is one durable file and the command that writes it; ack checks
// that every write acknowledged before a kill is still there.
type writerKind struct {
	name string
	file string // relative to the data dir
	args func(i int, nudge, model string) []string
	ack  func(t *testing.T, dir string, acked []int, nudge string) error
}

func kinds() []writerKind {
	return []writerKind{
		{"cron-jobs", "cron/jobs.json",
			func(i int, _, _ string) []string {
				return []string{"cron", "add", "--name", fmt.Sprintf("k%d", i), "--message", "m", "--every", "1h"}
			},
			func(t *testing.T, dir string, acked []int, _ string) error {
				r := raven(t, dir, "cron", "list")
				if r.code != 0 {
					return fmt.Errorf("cron list exit %d: %s", r.code, r.errOut)
				}
				return allNamed(r.out, acked, "k%d ")
			}},
		{"preferences", "sentinel/preferences.json",
			func(i int, _, _ string) []string {
				return []string{"sentinel", "prefs", "set", "muted_topics", fmt.Sprintf("topic-%d", i)}
			},
			func(t *testing.T, dir string, acked []int, _ string) error {
				b, err := os.ReadFile(filepath.Join(dir, "sentinel", "preferences.json"))
				if err != nil {
					return err
				}
				return allNamed(string(b), acked, `"topic-%d"`)
			}},
		{"feedback-jsonl+state", "sentinel/feedback.jsonl",
			func(i int, nudge, _ string) []string {
				return []string{"nudges", "feedback", nudge, "neutral", "--reason", fmt.Sprintf("r-%d-end", i)}
			},
			func(t *testing.T, dir string, acked []int, _ string) error {
				recs, _, err := jsonlCheck(filepath.Join(dir, "sentinel", "feedback.jsonl"))
				if err != nil {
					return err
				}
				return allNamed(strings.Join(recs, "\n"), acked, `r-%d-end"`)
			}},
		{"sentinel-tick", "sentinel/state.json",
			func(i int, _, model string) []string {
				return []string{"--model", model, "sentinel", "tick", "--json"}
			},
			func(t *testing.T, dir string, acked []int, _ string) error {
				// Every tick that returned appended its record; quotas may
				// turn later ticks into skips, which are records too.
				recs, _, err := jsonlCheck(filepath.Join(dir, "sentinel", "ticks.jsonl"))
				if err != nil {
					return err
				}
				if len(recs) < len(acked) {
					return fmt.Errorf("ticks.jsonl has %d records, %d ticks acknowledged", len(recs), len(acked))
				}
				return nil
			}},
		{"raven-db", "raven.db",
			func(i int, _, _ string) []string {
				return []string{"auth", "create", "--role", "device", "--name", fmt.Sprintf("dev-%d", i)}
			},
			func(t *testing.T, dir string, acked []int, _ string) error {
				r := raven(t, dir, "auth", "list")
				if r.code != 0 {
					return fmt.Errorf("auth list exit %d: %s", r.code, r.errOut)
				}
				return allNamed(r.out, acked, "dev-%d ")
			}},
	}
}

func allNamed(text string, acked []int, format string) error {
	for _, i := range acked {
		if !strings.Contains(text, fmt.Sprintf(format, i)) {
			return fmt.Errorf("acknowledged write %d (%q) lost", i, fmt.Sprintf(format, i))
		}
	}
	return nil
}

// TestKill9Loops starts a writer of each durable file kind, SIGKILLs it at a
// random moment within its usual run time, and checks after every kill that
// the files parse (doctor exits 0), no acknowledged write is lost, and that
// the next start sweeps any temp file a kill left.
func TestKill9Loops(t *testing.T) {
	n := iters(100, 1000)
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			model := newDataDir(t, dir)
			nudge := firstNudge(t, dir, model)
			// Calibrate: the kill lands uniformly over [0.3, 1.2) of a clean run,
			// past most of the start-up and across the write.
			start := time.Now()
			must(t, raven(t, dir, k.args(-1, nudge, model)...), "calibrate")
			d := time.Since(start)
			var acked []int
			killed, failures, tornSeen := 0, 0, 0
			temps := map[string]bool{}
			fail := func(i int, err error) {
				failures++
				t.Errorf("iteration %d: %v", i, err)
				if failures >= 5 {
					t.Fatalf("%s: stopping after %d failures", k.name, failures)
				}
			}
			for i := 0; i < n; i++ {
				cmd := exec.Command(ravenBin, append([]string{"--data-dir", dir}, k.args(i, nudge, model)...)...)
				cmd.Env = baseEnv()
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				delay := d*3/10 + time.Duration(rand.Int64N(int64(d)*9/10+1))
				timer := time.NewTimer(delay)
				select {
				case err := <-done:
					timer.Stop()
					if err != nil {
						fail(i, fmt.Errorf("writer failed unkilled: %v %s", err, out.String()))
						continue
					}
					acked = append(acked, i)
				case <-timer.C:
					_ = cmd.Process.Signal(syscall.SIGKILL)
					err := <-done
					if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						killed++
					} else if err == nil {
						acked = append(acked, i) // finished just before the signal
					}
				}
				for _, p := range tempFiles(dir) {
					temps[p] = true
				}
				if _, torn, err := jsonlCheck(filepath.Join(dir, "sentinel", "feedback.jsonl")); err == nil && torn > 0 {
					tornSeen = torn
				}
				if err := doctorOK(t, dir); err != nil {
					fail(i, err)
				}
				if err := k.ack(t, dir, acked, nudge); err != nil {
					fail(i, err)
				}
			}
			// The next start (a tick builds the runtime) sweeps the temp
			// files of killed writers; their pids are gone.
			must(t, raven(t, dir, "--model", model, "sentinel", "tick"), "tick after the loop")
			if left := tempFiles(dir); len(left) > 0 {
				fail(n, fmt.Errorf("temp files left after the next start: %v", left))
			}
			if err := doctorOK(t, dir); err != nil {
				fail(n, err)
			}
			if err := k.ack(t, dir, acked, nudge); err != nil {
				fail(n, err)
			}
			counts(t, "kill9/"+k.name, "iterations", n, "kills", killed, "acked", len(acked),
				"temp_files_left_by_kills", len(temps), "torn_lines", tornSeen, "failures", failures)
		})
	}
}
