package runtime

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

// askOrGreet asks the owner a question when told "ask", answers "hi" to
// anything else, and finishes once the question is answered: a model any
// number of conversations can share at once.
type askOrGreet struct{}

func (askOrGreet) Name() string { return "test/ask-or-greet" }
func (askOrGreet) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == llm.RoleTool:
		return &llm.Response{Content: "thanks: " + last.Content}, nil
	case strings.HasPrefix(last.Content, "ask"):
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "q", Name: "ask_user", Arguments: `{"questions":[{"question":"Which day?"}]}`}}}, nil
	}
	return &llm.Response{Content: "hi"}, nil
}

// Seed §13: a turn blocked on ask_user holds its lane and one user-pool
// slot until answered. With the gateway's default pool of 4, three pending
// questions leave a slot free; a fourth exhausts the pool. Through the
// assembled runtime with the default config and pools.
func TestAskUserHoldsLaneAndOneUserSlot(t *testing.T) {
	a, _ := newApp(t, false, askOrGreet{}, func(o *Options) { o.Pools = spine.DefaultPools() })
	ctx := context.Background()
	if spine.DefaultPools()[spine.OriginUser] != 4 {
		t.Fatalf("default user pool = %d, the seed's figure is 4", spine.DefaultPools()[spine.OriginUser])
	}
	submit := func(conv, text string) *spine.Ticket {
		t.Helper()
		tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "test", ChatID: conv, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	asked := func(conv string) bool { _, ok := a.Broker().Pending("test:" + conv); return ok }

	var asks []*spine.Ticket
	for _, c := range []string{"1", "2", "3"} {
		asks = append(asks, submit(c, "ask me"))
	}
	eventually(t, "three questions pending", func() bool { return asked("1") && asked("2") && asked("3") })
	if used, size := a.Scheduler().PoolInUse(spine.OriginUser); used != 3 || size != 4 {
		t.Fatalf("three pending questions hold %d of %d user slots, want 3 of 4", used, size)
	}

	// A fourth conversation still gets a slot.
	if r, err := submit("4", "hello").Wait(ctx); err != nil || r.Reply != "hi" {
		t.Fatalf("with three questions pending, a fourth conversation = %+v, %v", r, err)
	}
	// The asking conversation's lane is held: its next turn waits.
	next := submit("1", "hello again")
	if !a.Scheduler().HasInflight("test:1") {
		t.Fatal("the asking turn does not hold its lane")
	}

	// A fourth question takes the last slot: a fifth conversation waits.
	asks = append(asks, submit("5", "ask me"))
	eventually(t, "fourth question pending", func() bool { return asked("5") })
	if used, _ := a.Scheduler().PoolInUse(spine.OriginUser); used != 4 {
		t.Fatalf("four pending questions hold %d user slots, want 4", used)
	}
	waiting := submit("6", "hello")
	select {
	case <-waiting.Done():
		t.Fatal("a turn ran with four conversations blocked on ask_user (pool of 4)")
	case <-next.Done():
		t.Fatal("conversation 1 ran a second turn while its question was pending")
	default:
	}

	// Answering frees the slot and the lane, in that order of need.
	if err := a.Broker().ReplyText("test:1", "Tuesday"); err != nil {
		t.Fatal(err)
	}
	if r, _ := asks[0].Wait(ctx); !strings.Contains(r.Reply, "Tuesday") {
		t.Fatalf("answered turn = %+v", r)
	}
	var wg sync.WaitGroup
	for _, tk := range []*spine.Ticket{next, waiting} {
		wg.Go(func() {
			if r, err := tk.Wait(ctx); err != nil || r.Reply != "hi" {
				t.Errorf("queued turn = %+v, %v", r, err)
			}
		})
	}
	wg.Wait()
	for _, c := range []string{"2", "3", "5"} {
		if err := a.Broker().ReplyText("test:"+c, "Monday"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range asks[1:] {
		tk.Wait(ctx)
	}
}
