// Package chat is Raven's interactive terminal: a readline REPL whose prompt
// stays live while turns run, so the owner can add to a running turn, answer
// a question, or press Ctrl-C to cancel it.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/chzyer/readline"

	"github.com/raven-agent/raven/internal/spine"
)

// Dispatch hands one owner message to the runtime (answering a pending
// question, injecting into a running turn, or starting a turn). It returns
// the ticket of the turn it started, or nil.
type Dispatch func(ctx context.Context, req spine.TurnRequest) (*spine.Ticket, error)

// Options configure a REPL.
type Options struct {
	Conversation string // "cli:direct"
	Dispatch     Dispatch
	// Cancel stops the conversation's running turn (Ctrl-C).
	Cancel      func(conversation string) bool
	Running     func(conversation string) bool
	HistoryFile string
	Prompt      string
	Stdin       io.ReadCloser
	Stdout      io.Writer
	Stderr      io.Writer
	// View, if set, is told when a turn starts and when one fails, so a
	// streaming outlet can show its busy indicator and end a cut reply.
	View TurnView
}

// TurnView is the part of the terminal outlet that follows a turn.
type TurnView interface {
	Begin()
	Abort()
}

// REPL is an interactive session.
type REPL struct {
	o  Options
	rl *readline.Instance
	bg []func(ctx context.Context)
}

// New opens the terminal. Output written through Stdout() keeps the prompt intact.
func New(o Options) (*REPL, error) {
	if o.Prompt == "" {
		o.Prompt = "you › "
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          o.Prompt,
		HistoryFile:     o.HistoryFile,
		HistoryLimit:    1000,
		InterruptPrompt: "^C",
		EOFPrompt:       "",
		Stdin:           o.Stdin,
		Stdout:          o.Stdout,
		Stderr:          o.Stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("chat: terminal: %w", err)
	}
	return &REPL{o: o, rl: rl}, nil
}

// Terminal reports whether the REPL runs on a terminal, where readline
// redraws its prompt around every write.
func (r *REPL) Terminal() bool { return r.rl.Config.FuncIsTerminal() }

// Stdout is where asynchronous output (replies, proactive messages) goes.
func (r *REPL) Stdout() io.Writer { return r.rl.Stdout() }

// Go registers fn to run for the REPL's lifetime (e.g. Follow): Run starts
// it, cancels its context when the session ends, and returns only after fn
// returned. Call Go before Run.
func (r *REPL) Go(fn func(ctx context.Context)) { r.bg = append(r.bg, fn) }

// Run reads lines until Ctrl-D or ctx ends. Ctrl-C cancels the running turn
// when there is one, and otherwise clears the line.
func (r *REPL) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	defer r.rl.Close()
	channel, chatID, _ := spine.SplitConversationKey(r.o.Conversation)
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		r.rl.Close()
	}()
	for _, fn := range r.bg {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx)
		}()
	}
	for {
		line, err := r.rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			if r.o.Cancel != nil && r.o.Cancel(r.o.Conversation) {
				fmt.Fprintln(r.rl.Stdout(), "(cancelled)")
			}
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("chat: read: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "/quit" || line == "/exit" {
			return nil
		}
		tk, err := r.o.Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: channel, ChatID: chatID, Content: line})
		if err != nil {
			if ctx.Err() != nil {
				return nil // the session ended under the dispatch: nothing to report
			}
			fmt.Fprintln(r.rl.Stdout(), "error:", err)
			continue
		}
		if tk != nil {
			if r.o.View != nil {
				r.o.View.Begin()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.report(ctx, tk)
			}()
		}
	}
}

// report prints a failed turn's error; successful replies arrive through the outlet.
func (r *REPL) report(ctx context.Context, tk *spine.Ticket) {
	res, err := tk.Wait(ctx)
	if err != nil || res.Err == nil {
		return
	}
	if r.o.View != nil {
		r.o.View.Abort()
	}
	if cancelled(res.Err) {
		// Ctrl-C already said "(cancelled)"; a turn stopped because the
		// session ends needs no word either. The raw "context canceled"
		// would read as a failure.
		return
	}
	fmt.Fprintln(r.rl.Stdout(), "error:", res.Err)
}

// cancelled reports whether a turn ended because someone stopped it rather
// than because it failed: the handler sees only its context's error, not
// the scheduler's cause.
func cancelled(err error) bool {
	return errors.Is(err, spine.ErrCancelled) || errors.Is(err, spine.ErrInterrupted) || errors.Is(err, context.Canceled)
}
