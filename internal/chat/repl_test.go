package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

// Ctrl-C on a running turn prints "(cancelled)" and never the raw
// "context canceled" the stopped handler returns; Ctrl-D then exits
// quietly with no error.
func TestREPLCancelSaysCancelled(t *testing.T) {
	started := make(chan struct{}, 1)
	handler := func(ctx context.Context, _ *spine.Turn) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", fmt.Errorf("agent: llm: %w", ctx.Err()) // what a stopped model call returns
	}
	sched := spine.NewScheduler(handler, nil, spine.Options{})
	defer sched.Shutdown(context.Background())
	var first *spine.Ticket
	var mu sync.Mutex
	dispatch := func(_ context.Context, req spine.TurnRequest) (*spine.Ticket, error) {
		if req.Content == "next" {
			return nil, errors.New("marker")
		}
		tk, err := sched.Submit(req)
		mu.Lock()
		first = tk
		mu.Unlock()
		return tk, err
	}
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	r, err := New(Options{Conversation: "cli:direct", Dispatch: dispatch, Cancel: sched.Cancel, Stdin: inR, Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	io.WriteString(inW, "do the long thing\n")
	<-started
	io.WriteString(inW, "\x03") // Ctrl-C
	waitFor(t, "(cancelled)", func() bool { return strings.Contains(out.String(), "(cancelled)") })
	mu.Lock()
	tk := first
	mu.Unlock()
	res, _ := tk.Wait(context.Background())
	if !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("turn result %v, want the handler's context error", res.Err)
	}
	io.WriteString(inW, "next\n")
	waitFor(t, "second line", func() bool { return strings.Contains(out.String(), "error: marker") })
	inW.Close() // Ctrl-D
	if err := <-done; err != nil {
		t.Fatalf("Run after Ctrl-D = %v, want nil", err)
	}
	if got := out.String(); strings.Contains(got, "context canceled") {
		t.Fatalf("REPL printed the raw context error:\n%s", got)
	}
}
