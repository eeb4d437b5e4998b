package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/spine"
)

func newChatCmd(g *globals) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to Raven in the terminal (interactive, or one-shot with -m)",
		Long: `Interactive chat on conversation cli:direct. The prompt stays live while Raven works:
type to add to the running turn, Ctrl-C cancels it, Ctrl-D (or /quit) exits.
Proactive messages (reminders, nudges) are printed with a visible marker,
including those a gateway running on the same data dir produces for cli:direct.

With -m, send one message, print the reply and exit (non-zero on failure).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			// Keep routine logs off the conversation.
			log := quietLogger(os.Stderr, cfg)
			ctx := cmd.Context()
			app, err := gateway.New(ctx, gateway.Options{Paths: p, Config: cfg, Logger: log})
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				app.Close(sctx)
			}()
			app.EnableAskUser(nil)
			// Share the Sentinel's state (injects ride chat replies) without
			// ticking: a gateway on the same data dir owns the tick loop.
			if _, err := app.AttachSentinel(ctx); err != nil {
				return err
			}
			const conv = "cli:direct"
			if message != "" {
				return oneShot(ctx, app, conv, message, cmd)
			}
			// Fire cron jobs addressed to this terminal; per-fire claims keep a
			// gateway on the same data dir from firing them twice.
			if err := app.StartCron(ctx, "cli"); err != nil {
				return err
			}
			disp, err := app.NewDispatcher()
			if err != nil {
				return err
			}
			repl, err := chat.New(chat.Options{
				Conversation: conv,
				Dispatch: func(ctx context.Context, req spine.TurnRequest) (*spine.Ticket, error) {
					_, tk, err := disp.Dispatch(ctx, req)
					return tk, err
				},
				Cancel:      app.Scheduler.Cancel,
				HistoryFile: p.ChatHistory(),
				Stdin:       os.Stdin, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			out := channels.NewCLI(repl.Stdout())
			app.Hub.Register("cli", out)
			// A gateway on the same data dir produces proactive messages for
			// this conversation too (Sentinel nudges, cron deliveries): follow
			// it for as long as the REPL runs, reconnecting quietly.
			repl.Go(func(ctx context.Context) {
				chat.Follow(ctx, chat.FollowOptions{
					Conversation: conv, Deliver: out.Deliver, Logger: log,
					Dial: func(ctx context.Context) (*controlapi.Client, error) {
						return chat.DialGateway(ctx, p.Socket(), p.OperatorToken())
					},
				})
			})
			if app.Provider == nil {
				fmt.Fprintln(repl.Stdout(), "No model configured: replies will explain how to set one (raven config set model ...).")
			} else {
				fmt.Fprintf(repl.Stdout(), "Raven on %s. Ctrl-C cancels a running turn, Ctrl-D exits.\n", app.Provider.Name())
			}
			return repl.Run(ctx)
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "send one message, print the reply, exit")
	return cmd
}

// oneShot runs one user turn and prints its reply.
func oneShot(ctx context.Context, app *gateway.App, conv, message string, cmd *cobra.Command) error {
	if strings.TrimSpace(message) == "" {
		return usageErr(errors.New("chat -m: empty message"))
	}
	ch, id, _ := spine.SplitConversationKey(conv)
	tk, err := app.Scheduler.Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: message})
	if err != nil {
		return err
	}
	res, err := tk.Wait(ctx)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	fmt.Fprintln(cmd.OutOrStdout(), res.Reply)
	return nil
}
