package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tui"
)

func newTUICmd(g *globals) *cobra.Command {
	var conversation, tokenFile, socket, workspace string
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Operator terminal UI: chat, clarify prompts, /question and live events over the control API",
		Long: `raven tui connects to the running gateway over its control socket with the
operator token and shows one conversation: the message list (proactive
messages marked), an input box, ask_user prompts (arrow keys pick, Enter
answers, text beside a choice is a note), /question commands for owner
questions, and the live event feed. It reconnects after a gateway restart.

The session is an owner conversation working in --workspace (default: the
directory it was started in, unless that is the data dir): on connect it is
created or re-bound there through the control API (conversations.open), so
Raven can leave it a question. /take, /release and /conversations manage
Take Control.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			if _, _, ok := spine.SplitConversationKey(conversation); !ok {
				return usageErr(fmt.Errorf("--conversation %q: want channel:chat_id, e.g. tui:main", conversation))
			}
			if tokenFile == "" {
				tokenFile = p.OperatorToken()
			}
			if socket == "" {
				socket = p.Socket()
			}
			// The token is read on every dial so a rotated token file is
			// picked up when the TUI reconnects.
			dial := func(ctx context.Context) (tui.Client, error) {
				tok, err := auth.ReadTokenFile(tokenFile)
				if err != nil {
					return nil, err
				}
				c, err := controlapi.Dial(ctx, socket, tok)
				if err != nil {
					return nil, err
				}
				return c, nil
			}
			dir, _, err := resolveWorkspace(workspace, p.Root)
			if err != nil {
				return err
			}
			return tui.Run(cmd.Context(), tui.Options{Conversation: conversation, Dial: dial, Workspace: dir})
		},
	}
	cmd.Flags().StringVar(&conversation, "conversation", "tui:main", "conversation to show (channel:chat_id)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "credential file (default: the operator token in the data dir)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "directory this owner session works in (default: where tui started, unless that is the data dir)")
	cmd.Flags().StringVar(&socket, "socket", "", "control socket (default: raven.sock in the data dir)")
	return cmd
}
