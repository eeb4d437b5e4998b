package spine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func wait(t *testing.T, tk *Ticket) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := tk.Wait(ctx)
	if err != nil {
		t.Fatalf("ticket: %v", err)
	}
	return r
}

func shutdown(t *testing.T, s *Scheduler) {
	t.Helper()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStrictOrderAcrossThousandConversations(t *testing.T) {
	const convs, perConv = 1000, 20
	var mu sync.Mutex
	seen := make(map[string][]int)
	s := NewScheduler(func(ctx context.Context, tu *Turn) (string, error) {
		var n int
		fmt.Sscan(tu.Request.Content, &n)
		mu.Lock()
		seen[tu.Request.Conversation()] = append(seen[tu.Request.Conversation()], n)
		mu.Unlock()
		return "", nil
	}, nil, Options{Pools: map[Origin]int{OriginUser: 4}})
	var tickets []*Ticket
	for i := 0; i < perConv; i++ {
		for c := 0; c < convs; c++ {
			tk, err := s.Submit(TurnRequest{Origin: OriginUser, Channel: "t", ChatID: fmt.Sprint(c), Content: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, tk)
		}
	}
	for _, tk := range tickets {
		wait(t, tk)
	}
	shutdown(t, s)
	if len(seen) != convs {
		t.Fatalf("conversations seen = %d, want %d", len(seen), convs)
	}
	for conv, got := range seen {
		if len(got) != perConv {
			t.Fatalf("%s ran %d turns, want %d", conv, len(got), perConv)
		}
		for i, n := range got {
			if n != i {
				t.Fatalf("%s order = %v, want 0..%d", conv, got, perConv-1)
			}
		}
	}
}

func TestLaneIsSerial(t *testing.T) {
	var running, maxRunning atomic.Int32
	s := NewScheduler(func(ctx context.Context, tu *Turn) (string, error) {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		defer running.Add(-1)
		return "", nil
	}, nil, Options{})
	var tks []*Ticket
	for i := 0; i < 200; i++ {
		tk, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "one", Content: "x"})
		tks = append(tks, tk)
	}
	for _, tk := range tks {
		wait(t, tk)
	}
	shutdown(t, s)
	if maxRunning.Load() != 1 {
		t.Fatalf("max concurrent turns in one lane = %d, want 1", maxRunning.Load())
	}
}

// blockingHandler runs turns that wait for release, recording what they drained.
type blockingHandler struct {
	started chan string
	release chan struct{}
	mu      sync.Mutex
	drained map[string][]string
}

func newBlocking() *blockingHandler {
	return &blockingHandler{started: make(chan string, 16), release: make(chan struct{}), drained: map[string][]string{}}
}

func (b *blockingHandler) handle(ctx context.Context, tu *Turn) (string, error) {
	b.started <- tu.Request.Content
	select {
	case <-b.release:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	for _, r := range tu.Drain() { // the tool loop's next iteration
		b.mu.Lock()
		b.drained[tu.Request.Content] = append(b.drained[tu.Request.Content], r.Content)
		b.mu.Unlock()
	}
	return "reply to " + tu.Request.Content, nil
}

func TestInjectIsDrainedByRunningTurn(t *testing.T) {
	b := newBlocking()
	s := NewScheduler(b.handle, nil, Options{})
	first, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "first"})
	<-b.started
	if !s.HasInflight("c") {
		t.Fatal("HasInflight = false while a turn runs")
	}
	inj, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "also this", Busy: Inject})
	close(b.release)
	if r := wait(t, inj); !r.Injected {
		t.Fatalf("inject result = %+v, want Injected", r)
	}
	if r := wait(t, first); r.Reply != "reply to first" {
		t.Fatalf("first reply = %q", r.Reply)
	}
	shutdown(t, s)
	if got := b.drained["first"]; len(got) != 1 || got[0] != "also this" {
		t.Fatalf("drained = %v", got)
	}
	if s.HasInflight("c") {
		t.Fatal("HasInflight = true after all turns finished")
	}
}

func TestUndrainedInjectBecomesAppendedTurn(t *testing.T) {
	started := make(chan string, 4)
	release := make(chan struct{})
	s := NewScheduler(func(ctx context.Context, tu *Turn) (string, error) {
		started <- tu.Request.Content
		if tu.Request.Content == "first" {
			<-release // returns without ever draining
		}
		return "ok:" + tu.Request.Content, nil
	}, nil, Options{})
	s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "first"})
	<-started
	inj, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "late", Busy: Inject})
	close(release)
	r := wait(t, inj)
	if r.Injected || r.Reply != "ok:late" {
		t.Fatalf("undrained inject result = %+v, want its own turn", r)
	}
	shutdown(t, s)
}

func TestInterruptCancelsRunningTurn(t *testing.T) {
	b := newBlocking()
	s := NewScheduler(b.handle, nil, Options{})
	first, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "slow"})
	<-b.started
	second, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "now", Busy: Interrupt})
	r := wait(t, first)
	if !errors.Is(r.Err, ErrInterrupted) {
		t.Fatalf("interrupted turn err = %v, want ErrInterrupted", r.Err)
	}
	if got := <-b.started; got != "now" {
		t.Fatalf("next turn = %q, want the interrupting one", got)
	}
	close(b.release)
	if r := wait(t, second); r.Reply != "reply to now" {
		t.Fatalf("second = %+v", r)
	}
	shutdown(t, s)
}

func TestCancelStopsOnlyTheRunningTurn(t *testing.T) {
	b := newBlocking()
	s := NewScheduler(b.handle, nil, Options{})
	first, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "slow"})
	<-b.started
	next, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "queued"})
	if !s.Cancel("c") {
		t.Fatal("Cancel found no running turn")
	}
	if r := wait(t, first); !errors.Is(r.Err, ErrCancelled) {
		t.Fatalf("cancelled turn err = %v", r.Err)
	}
	<-b.started
	close(b.release)
	if r := wait(t, next); r.Reply != "reply to queued" {
		t.Fatalf("queued turn after cancel = %+v", r)
	}
	if s.Cancel("c") || s.Cancel("other") {
		t.Fatal("Cancel reported a turn where none runs")
	}
	shutdown(t, s)
}

func TestProactiveInjectAndInterruptAreDemoted(t *testing.T) {
	for _, busy := range []BusyPolicy{Inject, Interrupt} {
		t.Run(busy.String(), func(t *testing.T) {
			b := newBlocking()
			s := NewScheduler(b.handle, nil, Options{})
			first, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "user"})
			<-b.started
			pro, _ := s.Submit(TurnRequest{Origin: OriginSentinel, ConversationID: "c", Content: "nudge", Busy: busy})
			close(b.release)
			if r := wait(t, first); r.Err != nil || len(b.drained["user"]) != 0 {
				t.Fatalf("user turn disturbed by proactive %s: %+v drained=%v", busy, r, b.drained)
			}
			if r := wait(t, pro); r.Injected || r.Reply != "reply to nudge" {
				t.Fatalf("proactive result = %+v, want appended turn", r)
			}
			shutdown(t, s)
		})
	}
}

func TestOriginPoolBoundsConcurrency(t *testing.T) {
	var running, maxRunning atomic.Int32
	started := make(chan struct{}, 16)
	gate := make(chan struct{})
	s := NewScheduler(func(ctx context.Context, tu *Turn) (string, error) {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		started <- struct{}{}
		<-gate
		running.Add(-1)
		return "", nil
	}, nil, Options{Pools: map[Origin]int{OriginUser: 2}})
	var tks []*Ticket
	for i := 0; i < 6; i++ {
		tk, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: fmt.Sprint(i)})
		tks = append(tks, tk)
	}
	// An ANSWER turn shares the user pool.
	tk, _ := s.Submit(TurnRequest{Origin: OriginAnswer, ConversationID: "a"})
	tks = append(tks, tk)
	// Release turns one by one: each release lets exactly one more start.
	<-started
	<-started
	for i := 0; i < len(tks)-2; i++ {
		gate <- struct{}{}
		<-started
	}
	close(gate)
	for _, tk := range tks {
		wait(t, tk)
	}
	shutdown(t, s)
	if m := maxRunning.Load(); m != 2 {
		t.Fatalf("max concurrent user turns = %d, want 2", m)
	}
}

func TestReplyDeliveryAndEphemeralDrop(t *testing.T) {
	hub := NewHub(nil)
	var got []Message
	var mu sync.Mutex
	hub.Register("telegram", OutletFunc(func(ctx context.Context, m Message) error {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		return nil
	}))
	s := NewScheduler(func(ctx context.Context, tu *Turn) (string, error) { return "hi " + tu.Request.ChatID, nil }, hub, Options{})
	r1 := wait(t, must(s.Submit(TurnRequest{Origin: OriginUser, Channel: "telegram", ChatID: "42"})))
	r2 := wait(t, must(s.Submit(TurnRequest{Origin: OriginCron, Channel: "cron", ChatID: "job1"})))
	r3 := wait(t, must(s.Submit(TurnRequest{Origin: OriginUser, Channel: "nowhere", ChatID: "1"})))
	shutdown(t, s)
	if !r1.Delivered || len(got) != 1 || got[0].ChatID != "42" || !got[0].Reply {
		t.Fatalf("telegram reply: result %+v, outlet got %+v", r1, got)
	}
	if r2.Delivered || r2.Reply != "hi job1" {
		t.Fatalf("ephemeral reply: %+v, want dropped but returned on the ticket", r2)
	}
	if r3.Delivered {
		t.Fatalf("reply to unknown real channel reported delivered")
	}
	if err := hub.Post(context.Background(), Message{Channel: "nowhere"}); !errors.Is(err, ErrNoOutlet) {
		t.Fatalf("Post to unknown channel: %v, want ErrNoOutlet", err)
	}
}

func must(tk *Ticket, err error) *Ticket {
	if err != nil {
		panic(err)
	}
	return tk
}

func TestShutdownRefusesAndCancelsAfterGrace(t *testing.T) {
	b := newBlocking()
	s := NewScheduler(b.handle, nil, Options{})
	tk, _ := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c", Content: "stuck"})
	<-b.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // grace already over: running turns are cancelled
	if err := s.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown with expired grace: want error")
	}
	if r := wait(t, tk); r.Err == nil {
		t.Fatal("stuck turn was not cancelled")
	}
	if _, err := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: "c"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after shutdown: %v, want ErrClosed", err)
	}
}

func TestSubmitRejectsBadRequests(t *testing.T) {
	s := NewScheduler(func(context.Context, *Turn) (string, error) { return "", nil }, nil, Options{})
	defer shutdown(t, s)
	if _, err := s.Submit(TurnRequest{Origin: "martian", ConversationID: "c"}); err == nil {
		t.Fatal("unknown origin accepted")
	}
	if _, err := s.Submit(TurnRequest{Origin: OriginUser}); err == nil {
		t.Fatal("request without conversation accepted")
	}
}

func TestOriginGates(t *testing.T) {
	cases := []struct {
		o                             Origin
		proactive, inbound, systemGen bool
	}{
		{OriginUser, false, true, false},
		{OriginAnswer, false, true, true},
		{OriginSentinel, true, false, true},
		{OriginCron, true, false, true},
		{OriginHeartbeat, true, false, true},
		{OriginSubagent, true, false, true},
	}
	for _, c := range cases {
		if c.o.Proactive() != c.proactive || c.o.UserInbound() != c.inbound || c.o.SystemGenerated() != c.systemGen {
			t.Errorf("%s: proactive=%v inbound=%v system=%v", c.o, c.o.Proactive(), c.o.UserInbound(), c.o.SystemGenerated())
		}
	}
}

func BenchmarkSchedulerThroughput10kLanes(b *testing.B) {
	s := NewScheduler(func(context.Context, *Turn) (string, error) { return "", nil }, nil, Options{})
	const lanes = 10000
	keys := make([]string, lanes)
	for i := range keys {
		keys[i] = fmt.Sprint("c", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	tks := make([]*Ticket, 0, b.N)
	for i := 0; i < b.N; i++ {
		tk, err := s.Submit(TurnRequest{Origin: OriginUser, ConversationID: keys[i%lanes]})
		if err != nil {
			b.Fatal(err)
		}
		tks = append(tks, tk)
	}
	for _, tk := range tks {
		<-tk.Done()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
	s.Shutdown(context.Background())
}
