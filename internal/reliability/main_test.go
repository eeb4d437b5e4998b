//go:build reliability

package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fsizeEnv makes the test binary a launcher: set RLIMIT_FSIZE, ignore
// SIGXFSZ (the disposition survives exec) and exec raven, so its writes past
// the limit come back short or EFBIG, as on a full disk.
const fsizeEnv = "RAVEN_REL_FSIZE"

var ravenBin string

func TestMain(m *testing.M) {
	if lim := os.Getenv(fsizeEnv); lim != "" {
		os.Exit(fsizeLauncher(lim))
	}
	dir, err := os.MkdirTemp("", "raven-rel-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ravenBin = filepath.Join(dir, "raven")
	build := exec.Command("go", "build", "-o", ravenBin, "github.com/raven-agent/raven/cmd/raven")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build raven: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fsizeLauncher(spec string) int {
	lim, err := strconv.ParseUint(spec, 10, 64)
	if err != nil {
		return 90
	}
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return 91
	}
	args := os.Args[1:]
	if err := syscall.Exec(args[0], args, os.Environ()); err != nil {
		return 92
	}
	return 0
}

// long reports the mode scripts/reliability asked for.
func long() bool { return os.Getenv("RAVEN_RELIABILITY") == "long" }

func iters(fast, slow int) int {
	if long() {
		return slow
	}
	return fast
}

// counts prints one machine-readable line scripts/reliability sums up.
func counts(t *testing.T, kind string, kv ...any) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "RELIABILITY %s", kind)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	fmt.Println(b.String())
}

type result struct {
	out, errOut string
	code        int
}

func raven(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return ravenEnv(t, dir, nil, args...)
}

func ravenEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ravenBin, append([]string{"--data-dir", dir}, args...)...)
	cmd.Env = append(baseEnv(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return result{o.String(), e.String(), code}
}

func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "RAVEN_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func must(t *testing.T, r result, what string) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", what, r.code, r.out, r.errOut)
	}
	return r
}

// newDataDir onboards a data dir with a scripted planner that nudges, no
// quiet hours and no discovery, so a tick delivers at any time of day.
func newDataDir(t *testing.T, dir string) (model string) {
	t.Helper()
	must(t, raven(t, dir, "onboard"), "onboard")
	cfg := filepath.Join(dir, "config.json")
	var m map[string]any
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["sentinel"] = map[string]any{"discovery": false, "policy": map[string]any{"quiet_hours": map[string]any{"start": "00:00", "end": "00:00"}}}
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	model = filepath.Join(t.TempDir(), "planner.json")
	script := `{"turns":[{"tool_calls":[{"name":"planner_decision","arguments":
{"action":"nudge","reason":"deadline","priority":"medium","proactivity_score":0.8,"nudge_message":"The tax return is due Friday.","target_session":"cli:direct"}}]}]}`
	if err := os.WriteFile(model, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + model
}

// firstNudge runs one sentinel tick and returns the nudge it delivered.
func firstNudge(t *testing.T, dir, model string) string {
	t.Helper()
	r := must(t, raven(t, dir, "--model", model, "sentinel", "tick", "--json"), "sentinel tick")
	i := strings.Index(r.out, "{")
	var rec struct {
		NudgeID   string `json:"nudge_id"`
		Delivered bool   `json:"delivered"`
	}
	if i < 0 || json.Unmarshal([]byte(r.out[i:]), &rec) != nil || rec.NudgeID == "" {
		t.Fatalf("tick delivered no nudge: %s %s", r.out, r.errOut)
	}
	return rec.NudgeID
}

// doctorOK runs raven doctor: exit 0 means every check passed or only warned.
func doctorOK(t *testing.T, dir string) error {
	t.Helper()
	r := raven(t, dir, "doctor")
	if r.code != 0 {
		return fmt.Errorf("doctor exit %d:\n%s%s", r.code, r.out, r.errOut)
	}
	return nil
}

func cronIDs(t *testing.T, dir string) ([]string, error) {
	t.Helper()
	r := raven(t, dir, "cron", "list", "--json")
	if r.code != 0 {
		return nil, fmt.Errorf("cron list exit %d: %s", r.code, r.errOut)
	}
	var jobs []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(r.out), &jobs); err != nil {
		return nil, fmt.Errorf("cron list: %w", err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// jsonlCheck reads a JSONL file: every whole line must parse; it returns
// the parsed records' raw text and how many torn lines it met. A torn line
// is one that does not parse; the record after it must still be whole.
func jsonlCheck(path string) (records []string, torn int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) != nil {
			torn++
			continue
		}
		records = append(records, line)
	}
	return records, torn, nil
}

// tempFiles lists leftovers of interrupted atomic rewrites under dir.
func tempFiles(dir string) []string {
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".") && (strings.Contains(d.Name(), ".tmp-") || strings.Contains(d.Name(), ".trim-")) {
			left = append(left, p)
		}
		return nil
	})
	return left
}
