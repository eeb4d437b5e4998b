//go:build reliability

package reliability

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// diskWriter is one durable write and the file its error must name.
type diskWriter struct {
	name string
	// files are the names its error may give: feedback opens raven.db (its
	// policy state goes beside the log) before it appends, so a full disk
	// can refuse it there first.
	files []string
	args  func(i int, nudge string) []string
}

// namesOne reports whether msg names one of files itself ("/jobs.json:"),
// not only the temp file of its rewrite (".jobs.json.tmp-…").
func namesOne(msg string, files []string) bool {
	for _, f := range files {
		if strings.Contains(msg, "/"+f+":") {
			return true
		}
	}
	return false
}

func diskWriters() []diskWriter {
	return []diskWriter{
		{"cron-add", []string{"jobs.journal.jsonl", "jobs.json"}, func(i int, _ string) []string {
			return []string{"cron", "add", "--name", fmt.Sprintf("fd%d", i), "--message", strings.Repeat("m", 300), "--every", "1h"}
		}},
		{"prefs-set", []string{"preferences.json"}, func(i int, _ string) []string {
			return []string{"sentinel", "prefs", "set", "muted_topics", fmt.Sprintf("fdt-%d", i)}
		}},
		{"feedback", []string{"feedback.jsonl", "raven.db"}, func(i int, nudge string) []string {
			return []string{"nudges", "feedback", nudge, "neutral", "--reason", fmt.Sprintf("fdr-%d-%s-end", i, strings.Repeat("x", 200))}
		}},
	}
}

// TestFullDisk puts the data dir on a 2 MiB tmpfs (where mounting is
// allowed), fills it, and runs each writer until the disk refuses it: the
// command must fail with a non-zero exit and an error naming the file, every
// earlier write must survive, and once space is freed the next write works
// and a torn JSONL line does not swallow the record after it.
func TestFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		counts(t, "fulldisk/tmpfs", "skipped", 1)
		t.Skipf("tmpfs not mountable here (%v %s); TestShortWriteRlimit covers the injected error", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "d")
	model := newDataDir(t, dir)
	nudge := firstNudge(t, dir, model)
	// A few acknowledged writes of each kind before the disk fills.
	acked := map[string][]int{}
	for _, w := range diskWriters() {
		for i := 0; i < 3; i++ {
			must(t, raven(t, dir, w.args(i, nudge)...), w.name)
			acked[w.name] = append(acked[w.name], i)
		}
	}
	fill(t, filepath.Join(mnt, "filler"))

	enospc, failures := 0, 0
	for _, w := range diskWriters() {
		hit := false
		for i := 3; i < 200 && !hit; i++ {
			r := raven(t, dir, w.args(i, nudge)...)
			if r.code == 0 {
				acked[w.name] = append(acked[w.name], i) // fitted in a page already allocated
				continue
			}
			hit = true
			enospc++
			msg := r.out + r.errOut
			low := strings.ToLower(msg)
			if !namesOne(msg, w.files) || !strings.Contains(low, "no space") && !strings.Contains(low, "disk i/o error") && !strings.Contains(low, "disk is full") {
				failures++
				t.Errorf("%s on a full disk: exit %d, want an error naming one of %v and the cause:\n%s", w.name, r.code, w.files, msg)
			}
			t.Logf("%s on a full disk: %s", w.name, strings.TrimSpace(msg))
		}
		if !hit {
			failures++
			t.Errorf("%s never hit the full disk", w.name)
		}
	}
	failures += checkAcked(t, dir, acked)

	// The feedback log itself on a full disk: leave a page more free each
	// time the database's open is what the disk refuses, until the open fits
	// and the append is what runs out of room — cut short at a page's end.
	filler := filepath.Join(mnt, "filler")
	jsonlHit, stateHit := false, false
	for i, room := 2000, int64(0); i < 2400 && !jsonlHit; i++ {
		fill(t, filler)
		st, err := os.Stat(filler)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filler, max(st.Size()-room, 0)); err != nil {
			t.Fatal(err)
		}
		r := raven(t, dir, "nudges", "feedback", nudge, "neutral", "--reason", fmt.Sprintf("fdr-%d-%s-end", i, strings.Repeat("x", 200)))
		msg := r.out + r.errOut
		switch {
		case r.code == 0:
			acked["feedback"] = append(acked["feedback"], i)
		case strings.Contains(msg, "feedback.jsonl"):
			jsonlHit = true
			enospc++
			t.Logf("feedback append on a full disk: %s", strings.TrimSpace(msg))
			if !strings.Contains(strings.ToLower(msg), "no space") {
				failures++
				t.Errorf("feedback append on a full disk: want the cause in %s", msg)
			}
		case strings.Contains(msg, "state.json"):
			// Logged, but the policy state's rewrite found no room: said
			// so, and the same room again fills the log's last page.
			if !namesOne(msg, []string{"state.json"}) {
				failures++
				t.Errorf("state.json on a full disk: want an error naming it:\n%s", msg)
			}
			if !stateHit {
				t.Logf("feedback's state.json on a full disk: %s", strings.TrimSpace(msg))
			}
			stateHit = true
		default:
			room += 4096
		}
	}
	if !jsonlHit {
		failures++
		t.Errorf("the feedback append never met the full disk")
	}
	failures += checkAcked(t, dir, acked)

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	for _, w := range diskWriters() {
		r := raven(t, dir, w.args(1000, nudge)...)
		if r.code != 0 {
			failures++
			t.Errorf("%s after freeing space: exit %d %s", w.name, r.code, r.errOut)
			continue
		}
		acked[w.name] = append(acked[w.name], 1000)
	}
	failures += checkAcked(t, dir, acked)
	_, torn, _ := jsonlCheck(filepath.Join(dir, "sentinel", "feedback.jsonl"))
	if err := doctorOK(t, dir); err != nil {
		failures++
		t.Error(err)
	}
	if stateHit {
		enospc++
	}
	counts(t, "fulldisk/tmpfs", "enospc_hits", enospc, "torn_lines", torn, "failures", failures)
}

// fill appends to path until the file system says ENOSPC.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last page-sized scraps too, so no write finds room.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

// checkAcked verifies every acknowledged write of each kind is present and
// every file parses; it returns the number of failures.
func checkAcked(t *testing.T, dir string, acked map[string][]int) int {
	t.Helper()
	failures := 0
	r := raven(t, dir, "cron", "list")
	if err := allNamed(r.out, acked["cron-add"], "fd%d "); r.code != 0 || err != nil {
		failures++
		t.Errorf("cron jobs: exit %d %v %s", r.code, err, r.errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sentinel", "preferences.json"))
	if err == nil {
		err = allNamed(string(b), acked["prefs-set"], `"fdt-%d"`)
	}
	if err != nil {
		failures++
		t.Errorf("preferences: %v", err)
	}
	recs, _, err := jsonlCheck(filepath.Join(dir, "sentinel", "feedback.jsonl"))
	if err == nil {
		err = allNamed(strings.Join(recs, "\n"), acked["feedback"], "fdr-%d-")
	}
	if err != nil {
		failures++
		t.Errorf("feedback: %v", err)
	}
	return failures
}

// TestShortWriteRlimit injects the full-disk writer error where no tmpfs can
// be mounted (and everywhere, being cheap): raven runs with RLIMIT_FSIZE a
// few bytes past feedback.jsonl's end, so its append is cut short and leaves
// a torn line; the state files' rewrites get EFBIG. Each command must fail
// naming its file, lose nothing, and the next JSONL append must start on a
// fresh line after the torn one.
func TestShortWriteRlimit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	model := newDataDir(t, dir)
	nudge := firstNudge(t, dir, model)
	fb := filepath.Join(dir, "sentinel", "feedback.jsonl")
	padJSONL(t, dir, nudge, fb)
	n := iters(5, 25)
	acked := map[string][]int{}
	hits, failures := 0, 0
	for round := 0; round < n; round++ {
		for _, w := range diskWriters() {
			i := round * 10
			must(t, raven(t, dir, w.args(i, nudge)...), w.name)
			acked[w.name] = append(acked[w.name], i)
		}
		for _, w := range diskWriters() {
			st, err := os.Stat(fb)
			if err != nil {
				t.Fatal(err)
			}
			// A few bytes past the JSONL end (a short append), and smaller
			// than any rewritten state file (EFBIG on its temp file).
			lim := int64(17)
			if w.name == "feedback" {
				lim = st.Size() + 17
			}
			cmd := exec.Command(self, append([]string{ravenBin, "--data-dir", dir}, w.args(round*10+1, nudge)...)...)
			cmd.Env = append(baseEnv(), fsizeEnv+"="+strconv.FormatInt(lim, 10))
			out, err := cmd.CombinedOutput()
			if err == nil {
				failures++
				t.Errorf("%s past the file size limit succeeded: %s", w.name, out)
				continue
			}
			hits++
			if !namesOne(string(out), w.files[:1]) || !strings.Contains(strings.ToLower(string(out)), "too large") && !strings.Contains(string(out), "short write") {
				failures++
				t.Errorf("%s past the file size limit: %v, want an error naming %s and the cause:\n%s", w.name, err, w.files[0], out)
			}
			if round == 0 {
				t.Logf("%s past the file size limit: %s", w.name, strings.TrimSpace(string(out)))
			}
		}
		failures += checkAcked(t, dir, acked)
	}
	// One more of each after the last torn line: it must land whole.
	for _, w := range diskWriters() {
		must(t, raven(t, dir, w.args(999, nudge)...), w.name+" after the faults")
		acked[w.name] = append(acked[w.name], 999)
	}
	failures += checkAcked(t, dir, acked)
	_, torn, err := jsonlCheck(fb)
	if err != nil {
		t.Fatal(err)
	}
	if torn != n {
		failures++
		t.Errorf("torn lines = %d, want %d (one per short append)", torn, n)
	}
	if err := doctorOK(t, dir); err != nil {
		failures++
		t.Error(err)
	}
	counts(t, "fulldisk/rlimit", "rounds", n, "short_write_or_efbig_hits", hits, "torn_lines", torn, "failures", failures)
}

// padJSONL grows feedback.jsonl past 1 MiB with copies of a real record, so
// a file size limit just past its end is beyond every offset the database
// writes at: only the append is cut short.
func padJSONL(t *testing.T, dir, nudge, fb string) {
	t.Helper()
	must(t, raven(t, dir, "nudges", "feedback", nudge, "neutral", "--reason", "pad"), "pad record")
	b, err := os.ReadFile(fb)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	line := lines[len(lines)-1] + "\n"
	f, err := os.OpenFile(fb, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Repeat(line, (1<<20)/len(line)+1)); err != nil {
		t.Fatal(err)
	}
}
