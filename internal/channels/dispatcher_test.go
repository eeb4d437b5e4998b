package channels

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

type fakeSpine struct {
	mu        sync.Mutex
	inflight  bool
	pending   bool
	answerOK  bool
	submitted []spine.TurnRequest
	answers   []string
	posted    []spine.Message
}

func (f *fakeSpine) deps(hooks ...Hook) DispatcherDeps {
	return DispatcherDeps{
		HasInflight: func(string) bool { return f.inflight },
		Submit: func(r spine.TurnRequest) (*spine.Ticket, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.submitted = append(f.submitted, r)
			return &spine.Ticket{}, nil
		},
		PendingQuestion: func(string) bool { return f.pending },
		AnswerQuestion: func(_ string, text string) bool {
			f.answers = append(f.answers, text)
			return f.answerOK
		},
		Post: func(_ context.Context, m spine.Message) error {
			f.posted = append(f.posted, m)
			return nil
		},
		Hooks: hooks,
	}
}

func TestDispatcherRouting(t *testing.T) {
	pick := func(_ context.Context, r spine.TurnRequest) (bool, string) {
		if r.Content == "/pick 2" || r.Content == "2" {
			return true, "picked option 2"
		}
		return false, ""
	}
	tests := []struct {
		name        string
		content     string
		inflight    bool
		pending     bool
		answerOK    bool
		want        Outcome
		wantBusy    spine.BusyPolicy
		wantAnswers int
		wantPosted  int
	}{
		{"idle appends", "hello", false, false, false, Appended, spine.Append, 0, 0},
		{"in flight injects", "also this", true, false, false, Injected, spine.Inject, 0, 0},
		{"pending question answered", "the blue one", true, true, true, Answered, 0, 1, 0},
		{"number answers question before pick hook", "2", true, true, true, Answered, 0, 1, 0},
		{"slash is not an answer", "/status", true, true, true, Injected, spine.Inject, 0, 0},
		{"slash pick goes to hook even with a question", "/pick 2", true, true, true, Hooked, 0, 0, 1},
		{"vanished question falls through", "late", true, true, false, Injected, spine.Inject, 1, 0},
		{"hook consumes pick", "2", false, false, false, Hooked, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSpine{inflight: tt.inflight, pending: tt.pending, answerOK: tt.answerOK}
			d, err := NewDispatcher(f.deps(pick))
			if err != nil {
				t.Fatal(err)
			}
			req := spine.TurnRequest{Origin: spine.OriginSentinel, Channel: "telegram", ChatID: "42", Content: tt.content}
			got, tk, err := d.Dispatch(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("outcome %s, want %s", got, tt.want)
			}
			if len(f.answers) != tt.wantAnswers {
				t.Fatalf("answers %v, want %d", f.answers, tt.wantAnswers)
			}
			if len(f.posted) != tt.wantPosted {
				t.Fatalf("posted %v, want %d", f.posted, tt.wantPosted)
			}
			if tt.wantPosted > 0 && (f.posted[0].Channel != "telegram" || f.posted[0].ChatID != "42") {
				t.Fatalf("hook reply went to %s:%s", f.posted[0].Channel, f.posted[0].ChatID)
			}
			submitted := got == Appended || got == Injected
			if submitted != (len(f.submitted) == 1) || submitted != (tk != nil) {
				t.Fatalf("submitted %v ticket %v for outcome %s", f.submitted, tk, got)
			}
			if submitted {
				s := f.submitted[0]
				if s.Busy != tt.wantBusy || s.Origin != spine.OriginUser || s.Content != tt.content {
					t.Fatalf("submitted %+v, want busy %s origin user", s, tt.wantBusy)
				}
			}
		})
	}
}

func TestDispatcherRefusesEmptyAndBadDeps(t *testing.T) {
	f := &fakeSpine{}
	d, _ := NewDispatcher(f.deps())
	if _, _, err := d.Dispatch(context.Background(), spine.TurnRequest{Channel: "cli", ChatID: "x", Content: "  "}); !errors.Is(err, ErrEmptyMessage) {
		t.Fatalf("err %v, want ErrEmptyMessage", err)
	}
	deps := f.deps()
	deps.AnswerQuestion = nil
	if _, err := NewDispatcher(deps); err == nil {
		t.Fatal("half a question seam accepted")
	}
	if _, err := NewDispatcher(DispatcherDeps{}); err == nil {
		t.Fatal("missing seams accepted")
	}
}

// TestDispatcherWithScheduler checks INJECT against the real spine: a
// second message while the first turn runs reaches the running turn's
// mailbox instead of queuing a turn of its own.
func TestDispatcherWithScheduler(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	drained := make(chan []spine.TurnRequest, 1)
	var turns sync.WaitGroup
	handler := func(ctx context.Context, turn *spine.Turn) (string, error) {
		defer turns.Done()
		if turn.Request.Content == "first" {
			close(started)
			<-release
			drained <- turn.Drain()
		}
		return "ok", nil
	}
	turns.Add(1)
	s := spine.NewScheduler(handler, nil, spine.Options{})
	defer s.Shutdown(context.Background())
	d, err := NewDispatcher(DispatcherDeps{HasInflight: s.HasInflight, Submit: s.Submit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, _, err := d.Dispatch(ctx, spine.TurnRequest{Channel: "webhook", ChatID: "a", Content: "first"}); err != nil || out != Appended {
		t.Fatalf("first: %s %v", out, err)
	}
	<-started
	out, tk, err := d.Dispatch(ctx, spine.TurnRequest{Channel: "webhook", ChatID: "a", Content: "second"})
	if err != nil || out != Injected {
		t.Fatalf("second: %s %v", out, err)
	}
	close(release)
	got := <-drained
	if len(got) != 1 || got[0].Content != "second" {
		t.Fatalf("drained %+v", got)
	}
	res, err := tk.Wait(ctx)
	if err != nil || !res.Injected {
		t.Fatalf("inject ticket: %+v %v", res, err)
	}
	turns.Wait()
}
