package outbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/sqlitedb"
)

// childEnv makes the test binary a second process: "path|surface|claim".
const childEnv = "RAVEN_OUTBOX_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// runChild delivers everything pending on the database at path and prints
// each id it won, one a line.
func runChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "bad spec", spec)
		return 2
	}
	ctx := context.Background()
	db, err := sqlitedb.Open(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	s, err := Open(ctx, db, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Both children start delivering together: each says ready, then waits
	// for the parent to close stdin.
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	ids, lost, err := deliverAll(ctx, s, parts[1], parts[2] == "true")
	for _, id := range ids {
		fmt.Println(id)
	}
	fmt.Println("lost", lost)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

func TestTwoProcessesDeliverEachItemOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, claim := range []bool{false, true} {
		t.Run(fmt.Sprintf("claim=%v", claim), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "raven.db")
			s := openAt(t, path, Options{})
			const n = 300
			all := map[string]bool{}
			for i := range n {
				id, err := s.Put(ctx, item(fmt.Sprintf("m%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				all[id] = true
			}
			var cmds []*exec.Cmd
			var stdins []io.WriteCloser
			var outs []*bufio.Reader
			var errOuts []*bytes.Buffer
			for _, surface := range []string{"tui:1", "chat:2"} {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%v", childEnv, path, surface, claim))
				var errOut bytes.Buffer
				cmd.Stderr = &errOut
				in, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill() })
				cmds, stdins, outs, errOuts = append(cmds, cmd), append(stdins, in), append(outs, bufio.NewReader(out)), append(errOuts, &errOut)
			}
			for i, out := range outs {
				if line, err := out.ReadString('\n'); line != "ready\n" {
					t.Fatalf("child %d: %q, %v: %s", i, line, err, errOuts[i])
				}
			}
			for _, in := range stdins {
				in.Close()
			}
			var got [][]string
			var errs []error
			lost := 0
			for i, c := range cmds {
				rest, _ := io.ReadAll(outs[i])
				err := c.Wait()
				if err != nil {
					err = fmt.Errorf("%v: %s", err, errOuts[i])
				}
				errs = append(errs, err)
				fields := strings.Fields(string(rest))
				if len(fields) < 2 || fields[len(fields)-2] != "lost" {
					t.Fatalf("child %d output %q", i, rest)
				}
				l, _ := strconv.Atoi(fields[len(fields)-1])
				lost += l
				got = append(got, fields[:len(fields)-2])
			}
			checkExactlyOnce(t, all, got, errs)
			if p, _ := s.Pending(ctx, 0); len(p) != 0 {
				t.Fatalf("%d left pending", len(p))
			}
			t.Logf("won %d / %d, lost %d races", len(got[0]), len(got[1]), lost)
			// The bare race must really overlap: the loser saw the items
			// pending and was refused them, rather than starting late.
			if !claim && lost == 0 {
				t.Fatal("no delivery race happened")
			}
		})
	}
}
