package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/outbox"
)

// Two `raven inbox clear` processes racing over one outbox deliver each
// message exactly once between them.
func TestTwoInboxClearsDeliverEachMessageOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	st := e.Outbox()
	const n = 200
	for i := range n {
		if _, err := st.Put(context.Background(), outbox.Item{Origin: outbox.OriginCron, Content: fmt.Sprintf("reminder %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := e.Start("inbox", "clear"), e.Start("inbox", "clear")
	cleared := 0
	re := regexp.MustCompile(`^cleared (\d+) message\(s\)`)
	for _, p := range []*Proc{a, b} {
		r := p.Wait(30 * time.Second)
		m := re.FindStringSubmatch(r.Stdout)
		if r.Code != 0 || m == nil {
			t.Fatalf("%s", r)
		}
		k, _ := strconv.Atoi(m[1])
		cleared += k
	}
	if cleared != n {
		t.Fatalf("the two clears delivered %d messages, want %d", cleared, n)
	}
	if left, _ := st.Count(context.Background()); left != 0 {
		t.Fatalf("%d left pending", left)
	}
}
