package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

func newConvListCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List conversations: kind, workspace, whether each can hold a question, controller, pending request",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOp(cmd, g, cf, false, func(ops questionOps) (questions.ListResult, error) {
				return ops.ConversationsList(cmd.Context(), api.Empty{})
			}, func(w io.Writer, l questions.ListResult) error {
				if asJSON || g.json {
					return printJSON(w, l)
				}
				if len(l.Conversations) == 0 {
					fmt.Fprintln(w, "no conversations")
					return nil
				}
				for _, c := range l.Conversations {
					fmt.Fprintf(w, "%-24s %-6s %s\n", c.ID, c.Kind, c.Summary())
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printConversation(w io.Writer, c questions.ConversationView) {
	fmt.Fprintf(w, "conversation  %s\nkind          %s\nincarnation   %s\nrevision      %d\n", c.ID, c.Kind, c.Incarnation, c.Revision)
	if c.Workspace.Path != "" {
		fmt.Fprintf(w, "workspace     %s\n", c.Workspace.Path)
	}
	if c.Owner != "" {
		fmt.Fprintf(w, "owner         %s (generation %d)\n", c.Owner, c.OwnerGeneration)
	}
	if c.NativeOwner != "" {
		fmt.Fprintf(w, "native seat   %s\n", c.NativeOwner)
	}
	if c.Controller != "" {
		fmt.Fprintf(w, "controller    %s\n", c.Controller)
	}
	if c.CanHoldQuestion {
		fmt.Fprintln(w, "questions     can hold one")
	} else {
		fmt.Fprintf(w, "questions     cannot hold one (%s)\n", c.HoldReason)
	}
	if c.PendingRequest != "" {
		fmt.Fprintf(w, "pending       %s (raven conversations questions %s)\n", c.PendingRequest, c.ID)
	}
}

func viewPrinter(g *globals, asJSON *bool) func(io.Writer, questions.ConversationView) error {
	return func(w io.Writer, v questions.ConversationView) error {
		if *asJSON || g.json {
			return printJSON(w, v)
		}
		printConversation(w, v)
		return nil
	}
}

func newConvShowCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show CONVERSATION",
		Short: "Show one conversation",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, g, cf, false, func(ops questionOps) (questions.ConversationView, error) {
				return ops.ConversationsShow(cmd.Context(), questions.ConversationParams{Conversation: args[0]})
			}, viewPrinter(g, &asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newConvNewCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	var workspace, kind, id string
	cmd := &cobra.Command{
		Use:   "new --workspace DIR [--kind owner|native|room|global|side] [--id CONVERSATION]",
		Short: "Create a conversation; an owner conversation (the default) is bound to DIR and to you",
		Long: "Create a conversation. An owner conversation is bound to an existing local directory and to the\n" +
			"operator credential, with a fresh incarnation; it is the only kind that can hold a question.\n" +
			"native, room, global and side conversations can be created but never hold one.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind == "" || kind == string(questions.KindOwner) {
				if err := requireFlags(cmd, "workspace"); err != nil {
					return err
				}
			}
			if !questions.Kind(kind).Valid() && kind != "" {
				return usageErr(fmt.Errorf("--kind %q: want owner, native, room, global or side", kind))
			}
			if workspace != "" {
				abs, err := filepath.Abs(workspace)
				if err != nil {
					return usageErr(fmt.Errorf("--workspace: %w", err))
				}
				workspace = abs
			}
			return runOp(cmd, g, cf, true, func(ops questionOps) (questions.ConversationView, error) {
				return ops.ConversationsNew(cmd.Context(), questions.NewParams{Conversation: id, Kind: questions.Kind(kind), Workspace: workspace})
			}, viewPrinter(g, &asJSON))
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "existing local directory the conversation works in (required for owner)")
	cmd.Flags().StringVar(&kind, "kind", "", "conversation kind: owner (default), native, room, global, side")
	cmd.Flags().StringVar(&id, "id", "", "conversation ID (default: KIND:UUID)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newConvResetCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reset CONVERSATION",
		Short: "Rotate the conversation's incarnation; its pending question is cancelled",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, g, cf, true, func(ops questionOps) (questions.ConversationView, error) {
				return ops.ConversationsReset(cmd.Context(), questions.ConversationParams{Conversation: args[0]})
			}, viewPrinter(g, &asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newConvTakeCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "take CONVERSATION [--ttl 15m]",
		Short: "Take Control: this credential (a control device with --token-file) becomes the conversation's controller",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 || ttl%time.Second != 0 {
				return usageErr(fmt.Errorf("--ttl %s: want whole seconds", ttl))
			}
			return runOp(cmd, g, cf, true, func(ops questionOps) (questions.TakeResult, error) {
				return ops.ConversationsTake(cmd.Context(), questions.TakeParams{Conversation: args[0], TTLSeconds: int(ttl / time.Second)})
			}, func(w io.Writer, r questions.TakeResult) error {
				if asJSON || g.json {
					return printJSON(w, r)
				}
				fmt.Fprintf(w, "%s now controls %s until %s\n", r.Lease.Holder, r.Conversation, r.Lease.ExpiresAt.Local().Format(time.DateTime))
				if r.Lease.Replaced != "" {
					fmt.Fprintf(w, "replaced %s as controller\n", r.Lease.Replaced)
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "lease length (default 15m, at most 24h)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newConvReleaseCmd(g *globals, cf *convFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "release CONVERSATION",
		Short: "Release Take Control of the conversation",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, g, cf, true, func(ops questionOps) (questions.ReleaseResult, error) {
				return ops.ConversationsRelease(cmd.Context(), questions.ConversationParams{Conversation: args[0]})
			}, func(w io.Writer, r questions.ReleaseResult) error {
				if asJSON || g.json {
					return printJSON(w, r)
				}
				if r.Released {
					fmt.Fprintf(w, "released control of %s\n", r.Conversation)
				} else {
					fmt.Fprintf(w, "nobody held control of %s\n", r.Conversation)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
