package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

// errNoTerminalAnswer ends a one-shot turn that asked the owner a question
// when stdin cannot answer it.
var errNoTerminalAnswer = errors.New("chat -m: Raven asked a question, but stdin is not a terminal and has no answer; run `raven chat` interactively, or pipe the answer into stdin")

func newChatCmd(g *globals) *cobra.Command {
	var message string
	var noStream bool
	var bind chatBinding
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to Raven in the terminal (interactive, or one-shot with -m)",
		Long: `Interactive chat on conversation cli:direct. The prompt stays live while Raven works:
type to add to the running turn, Ctrl-C cancels it, Ctrl-D (or /quit) exits.
Proactive messages (reminders, nudges) are printed with a visible marker,
including those a gateway running on the same data dir produces for cli:direct,
and those kept in the outbox while no surface was attached.

With -m, send one message, print the reply and exit (non-zero on failure). If the
turn asks a question (ask_user), it is printed and the answer read from stdin; with
no terminal and nothing on stdin the command fails at once.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bind.validate(); err != nil {
				return err
			}
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if noStream {
				cfg.Agent.Stream = false
			}
			// Keep routine logs off the conversation.
			log := quietLogger(os.Stderr, cfg)
			ctx := cmd.Context()
			o := runtime.Options{Paths: p, Config: cfg, Logger: log}
			if message == "" {
				// Fire cron jobs addressed to this terminal; per-fire claims keep a
				// gateway on the same data dir from firing them twice. A gateway
				// owns the Sentinel's tick loop: the chat shares its state only.
				o.Services, o.CronChannels = runtime.ServiceCron, []string{runtime.CLIChannel}
			}
			rt, err := runtime.Build(ctx, o)
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				rt.Close(sctx)
			}()
			release, err := bindChat(ctx, rt, bind, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer release()
			if message != "" {
				return oneShot(ctx, rt, bind.conversation(), message, cmd)
			}
			return repl(ctx, rt, bind.conversation(), cmd)
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "send one message, print the reply, exit")
	cmd.Flags().BoolVar(&noStream, "no-stream", false, "print each reply whole when it is complete (config agent.stream)")
	cmd.Flags().StringVar(&bind.workspace, "workspace", "", "directory this owner session works in (default: where chat started, unless that is the data dir)")
	cmd.Flags().StringVar(&bind.native, "native", "", "attach as the native seat of conversation CONV (channel:chat_id): claims it at start, releases it at exit")
	return cmd
}

func repl(ctx context.Context, rt *runtime.Runtime, conv string, cmd *cobra.Command) error {
	p := rt.Paths()
	view := &lateView{}
	r, err := chat.New(chat.Options{
		Conversation: conv,
		Dispatch: func(ctx context.Context, req spine.TurnRequest) (*spine.Ticket, error) {
			_, tk, err := rt.Inbound().Dispatch(ctx, req)
			return tk, err
		},
		Cancel:      rt.Scheduler().Cancel,
		HistoryFile: p.ChatHistory(),
		Stdin:       os.Stdin, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		View: view,
	})
	if err != nil {
		return err
	}
	if rt.Provider() == nil {
		fmt.Fprintln(r.Stdout(), "No model configured: replies will explain how to set one (raven config set model ...).")
	} else {
		fmt.Fprintf(r.Stdout(), "Raven on %s. Ctrl-C cancels a running turn, Ctrl-D exits.\n", rt.Provider().Name())
	}
	out := channels.NewStreamingCLI(r.Stdout(), channels.CLIStream{Redraw: r.Terminal(), Busy: r.Terminal()})
	view.set(out)
	// The REPL is this runtime's surface for cli:direct: replies, nudges and
	// the outbox's waiting items are shown here.
	detach, err := rt.AttachOwner(ctx, conv, out)
	if err != nil {
		return err
	}
	defer detach()
	// A gateway on the same data dir produces proactive messages for this
	// conversation too (Sentinel nudges, cron deliveries): follow it for as
	// long as the REPL runs, reconnecting quietly.
	r.Go(func(ctx context.Context) {
		chat.Follow(ctx, chat.FollowOptions{
			Conversation: conv, Deliver: out.Deliver, Logger: rt.Logger(),
			Dial: func(ctx context.Context) (*controlapi.Client, error) {
				return chat.DialGateway(ctx, p.Socket(), p.OperatorToken())
			},
		})
	})
	return r.Run(ctx)
}

// oneShot runs one user turn and prints its reply.
func oneShot(ctx context.Context, rt *runtime.Runtime, conv, message string, cmd *cobra.Command) error {
	if strings.TrimSpace(message) == "" {
		return usageErr(errors.New("chat -m: empty message"))
	}
	out := channels.NewStreamingCLI(cmd.OutOrStdout(), channels.CLIStream{Busy: isTerminal(cmd.OutOrStdout())})
	term := &oneShotTerminal{rt: rt, conv: conv, in: cmd.InOrStdin(), out: out, w: cmd.OutOrStdout()}
	detach, err := rt.Attach(ctx, conv, term)
	if err != nil {
		return err
	}
	defer detach()
	ch, id, _ := spine.SplitConversationKey(conv)
	tk, err := rt.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: message})
	if err != nil {
		return err
	}
	out.Begin()
	res, err := tk.Wait(ctx)
	if err != nil || res.Err != nil || term.failed() != nil {
		out.Abort()
	}
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C: the owner stopped it, as Ctrl-C in the REPL does —
			// at once, not after the shutdown grace — and it is no failure
			// to explain.
			rt.Scheduler().Cancel(conv)
			return &exitError{code: exitInterrupted, err: errChatCancelled}
		}
		return err
	}
	if ferr := term.failed(); ferr != nil {
		return ferr
	}
	if res.Err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errChatCancelled}
		}
		return res.Err
	}
	if err := out.Finish(res.Reply); err != nil {
		return err
	}
	waitBackground(ctx, rt, cmd.ErrOrStderr())
	if rt.Provider() == nil {
		// The reply explained how to set one; the one-shot still failed.
		return errChatNoModel
	}
	return nil
}

// waitBackground keeps a one-shot chat attached while work its turn started
// in the background (a picked menu's micro-agent, a spawn) is running, so
// the result it promised reaches this terminal instead of being cancelled
// by the exit. Ctrl-C stops the wait (and the work, with the process).
func waitBackground(ctx context.Context, rt *runtime.Runtime, stderr io.Writer) {
	n := rt.Subagents().Running()
	if n == 0 {
		return
	}
	fmt.Fprintf(stderr, "waiting for %d background task(s) to report here (Ctrl-C stops them)\n", n)
	done := make(chan struct{})
	go func() { rt.Subagents().Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// errChatCancelled ends a one-shot chat the owner interrupted.
var errChatCancelled = errors.New("chat -m: cancelled")

// exitInterrupted is the shell's code for a command ended by SIGINT.
const exitInterrupted = 130

// errChatNoModel fails a one-shot chat that had no model to answer it.
var errChatNoModel = errors.New("chat -m: no model configured")

// oneShotTerminal is `raven chat -m`'s surface: proactive messages are
// printed with the marker, the reply is left to oneShot, and an ask_user
// question is printed and answered from stdin.
type oneShotTerminal struct {
	rt   *runtime.Runtime
	conv string
	in   io.Reader
	out  *channels.CLI
	w    io.Writer

	once   sync.Once
	lines  *bufio.Reader
	mu     sync.Mutex
	askErr error
}

// Stream shows the reply while it is written.
func (t *oneShotTerminal) Stream(ctx context.Context, d spine.Delta) { t.out.Stream(ctx, d) }

func (t *oneShotTerminal) Deliver(ctx context.Context, m spine.Message) error {
	if m.Reply {
		return nil // printed by oneShot from the ticket
	}
	return t.out.Deliver(ctx, m)
}

// Ask prints the question and reads one line of stdin as its answer. With
// nothing to read the turn is cancelled at once and the command fails.
func (t *oneShotTerminal) Ask(req questions.ClarifyRequest) {
	q := questions.Question{Question: req.Question, Choices: req.Choices, Header: req.Header, Recommended: req.Recommended}
	fmt.Fprintln(t.w, questions.RenderChannelText(q, req.Index, req.Total, time.Duration(req.TimeoutS)*time.Second))
	t.once.Do(func() { t.lines = bufio.NewReader(t.in) })
	go func() {
		line, err := t.lines.ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" && err != nil {
			t.fail(errNoTerminalAnswer)
			return
		}
		if rerr := t.rt.Broker().ReplyText(t.conv, line); rerr != nil {
			t.fail(fmt.Errorf("chat -m: answer %q not taken: %w", line, rerr))
		}
	}()
}

func (t *oneShotTerminal) fail(err error) {
	t.mu.Lock()
	t.askErr = err
	t.mu.Unlock()
	t.rt.Scheduler().Cancel(t.conv)
}

func (t *oneShotTerminal) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.askErr
}

// lateView is the REPL's chat.TurnView: the outlet it forwards to needs
// the REPL's own writer, so it is set once both exist.
type lateView struct {
	mu  sync.Mutex
	out *channels.CLI
}

func (v *lateView) set(out *channels.CLI) {
	v.mu.Lock()
	v.out = out
	v.mu.Unlock()
}

func (v *lateView) get() *channels.CLI {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out
}

func (v *lateView) Begin() {
	if out := v.get(); out != nil {
		out.Begin()
	}
}

func (v *lateView) Abort() {
	if out := v.get(); out != nil {
		out.Abort()
	}
}

// isTerminal reports whether w is a terminal, where a busy indicator helps
// rather than litters.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}
