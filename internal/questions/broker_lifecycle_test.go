package questions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// resolutions records the broker's OnResolved calls.
type resolutions struct {
	mu  sync.Mutex
	got []string
}

func (r *resolutions) add(conv string, res Resolution) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s %d/%d %s", conv, res.Index, res.Total, res.Status))
}

func (r *resolutions) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func newObservedHarness(t *testing.T) (*brokerHarness, *resolutions) {
	h := newBrokerHarness(t)
	rs := &resolutions{}
	h.b.onRes = rs.add
	return h, rs
}

// Every asked question reports how it ended, once, with its place in the
// call; questions never asked report nothing.
func TestOnResolvedReportsEachEnding(t *testing.T) {
	cases := []struct {
		name string
		end  func(t *testing.T, h *brokerHarness, cancel context.CancelFunc, r ClarifyRequest)
		want []string
	}{
		{"answered then timeout", func(t *testing.T, h *brokerHarness, _ context.CancelFunc, r ClarifyRequest) {
			if err := h.b.Reply("c:1", Response{Batch: r.Batch, Choice: new(int)}); err != nil {
				t.Fatal(err)
			}
			h.next(t)
			h.clk.Advance(time.Minute)
		}, []string{"c:1 0/3 answered", "c:1 1/3 timeout"}},
		{"cancelled", func(t *testing.T, h *brokerHarness, cancel context.CancelFunc, _ ClarifyRequest) {
			cancel()
		}, []string{"c:1 0/3 cancelled"}},
		{"superseded", func(t *testing.T, h *brokerHarness, _ context.CancelFunc, _ ClarifyRequest) {
			newer := h.askAsync(context.Background(), "c:1", threeQs[2:], time.Minute)
			h.next(t)
			t.Cleanup(func() { h.b.CancelAll("test over"); <-newer })
		}, []string{"c:1 0/3 superseded"}},
		{"cancel all", func(t *testing.T, h *brokerHarness, _ context.CancelFunc, _ ClarifyRequest) {
			h.b.CancelAll("the gateway is shutting down")
		}, []string{"c:1 0/3 cancelled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rs := newObservedHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := h.askAsync(ctx, "c:1", threeQs, time.Minute)
			tc.end(t, h, cancel, h.next(t))
			<-res
			if got := rs.list(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("resolutions %v, want %v", got, tc.want)
			}
		})
	}
}

// CancelAll ends a waiting call with "cancelled: <reason>" for the model,
// and refuses later calls at once without asking anyone.
func TestCancelAllEndsWaitsAndRefusesNewOnes(t *testing.T) {
	h, rs := newObservedHarness(t)
	res := h.askAsync(context.Background(), "c:1", threeQs, time.Hour)
	h.next(t)
	h.b.CancelAll("the gateway is shutting down")
	for _, name := range []string{"waiting call", "later call"} {
		got := <-res
		if !errors.Is(got.err, ErrAskCancelled) || got.err.Error() != "cancelled: the gateway is shutting down" {
			t.Fatalf("%s: err = %v", name, got.err)
		}
		for _, a := range got.answers {
			if a.Status != AnswerCancelled {
				t.Fatalf("%s: answer %+v, want cancelled", name, a)
			}
		}
		if h.b.PendingFor("c:1") {
			t.Fatalf("%s: still pending", name)
		}
		res = h.askAsync(context.Background(), "c:1", threeQs, time.Hour)
	}
	select {
	case r := <-h.requests:
		t.Fatalf("a call after CancelAll asked %+v", r)
	default:
	}
	if got := rs.list(); len(got) != 1 {
		t.Fatalf("resolutions %v, want only the asked question's", got)
	}
}

// Pending hands back the waiting question with what is left of its budget.
func TestPendingReturnsRemainingBudget(t *testing.T) {
	h := newBrokerHarness(t)
	if _, ok := h.b.Pending("c:1"); ok {
		t.Fatal("pending before any call")
	}
	res := h.askAsync(context.Background(), "c:1", threeQs, time.Minute)
	first := h.next(t)
	h.clk.Advance(25 * time.Second)
	got, ok := h.b.Pending("c:1")
	want := first
	want.TimeoutS = 35
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Pending = %+v %v, want %+v", got, ok, want)
	}
	if _, ok := h.b.Pending("c:2"); ok {
		t.Fatal("another conversation reports the question")
	}
	h.clk.Advance(35 * time.Second)
	<-res
	if _, ok := h.b.Pending("c:1"); ok {
		t.Fatal("pending after the budget ended")
	}
}
