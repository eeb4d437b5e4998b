package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func newApprovalsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List and answer exec approval requests (network, paths outside the workspace)",
		Long: `A command the agent runs with exec is confined to the workspace with the
network off. When it needs more (network, or writing a directory outside the
workspace) it asks you, and waits until the request expires (10 minutes).
Each request is bound to the exact command, working directory and grants.

  raven approvals list            pending requests (--all for answered ones too)
  raven approvals approve ID      allow this run once
  raven approvals approve ID --always   allow this exact command, directory and grants from now on
  raven approvals deny ID         refuse; the command does not run

With a gateway running they go through its control API (the waiting command
wakes at once); without one they work on raven.db directly, as the operator.`,
	}
	cmd.AddCommand(newApprovalsListCmd(g), newApprovalsApproveCmd(g), newApprovalsDenyCmd(g))
	return cmd
}

// openApprovals opens raven.db, the approvals store (operator authority)
// and the event log its decisions are recorded in.
func openApprovals(ctx context.Context, g *globals) (*approvals.Store, func(), error) {
	p, err := g.paths()
	if err != nil {
		return nil, nil, err
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return nil, nil, err
	}
	events, err := eventlog.Open(ctx, db, eventlog.Options{Clock: clock.Real()})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	st, err := approvals.Open(ctx, db, approvals.Options{
		Clock: clock.Real(), Logger: slog.New(slog.DiscardHandler), Authority: approvals.OperatorOnly{},
		Emit: func(ctx context.Context, kind, conv string, payload any) error {
			_, err := events.Append(ctx, kind, conv, payload)
			return err
		},
	})
	if err != nil {
		events.Close()
		db.Close()
		return nil, nil, err
	}
	return st, func() { closeAll(events, db) }, nil
}

func closeAll(events *eventlog.Log, db *sql.DB) {
	events.Close()
	db.Close()
}

// cliOperator is the principal of `raven approvals`: whoever can open the
// data dir's database is the owner.
var cliOperator = auth.Principal{Name: auth.OperatorName, Role: auth.RoleOperator}

func approvalsErr(err error) error {
	switch {
	case errors.Is(err, approvals.ErrNotFound), errors.Is(err, approvals.ErrInvalid),
		errors.Is(err, approvals.ErrResolved), errors.Is(err, approvals.ErrExpired):
		return usageErr(err)
	}
	return err
}

func newApprovalsListCmd(g *globals) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List pending approval requests, newest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs, err := listApprovals(cmd.Context(), g, all)
			if err != nil {
				return err
			}
			if asJSON || g.json {
				if rs == nil {
					rs = []approvals.Request{}
				}
				return printJSON(cmd.OutOrStdout(), rs)
			}
			printApprovals(cmd.OutOrStdout(), rs, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include answered, expired and withdrawn requests")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printApprovals(w io.Writer, rs []approvals.Request, all bool) {
	if len(rs) == 0 {
		if all {
			fmt.Fprintln(w, "no approval requests")
		} else {
			fmt.Fprintln(w, "no pending approval requests")
		}
		return
	}
	for _, r := range rs {
		fmt.Fprintf(w, "%s  %s  needs %s  (expires %s)\n", r.ID, r.Status, strings.Join(r.Grants, ", "), r.ExpiresAt.Local().Format("15:04:05"))
		if r.Decision != "" {
			fmt.Fprintf(w, "  decided: %s by %s\n", r.Decision, r.DecidedBy)
		}
		fmt.Fprintf(w, "  in:      %s\n", r.Dir)
		if r.Conversation != "" {
			fmt.Fprintf(w, "  for:     %s\n", r.Conversation)
		}
		for i, line := range strings.Split(r.Command, "\n") {
			label := "  command:"
			if i > 0 {
				label = "          "
			}
			fmt.Fprintf(w, "%s %s\n", label, line)
		}
	}
}

func newApprovalsApproveCmd(g *globals) *cobra.Command {
	var always bool
	cmd := &cobra.Command{
		Use:   "approve ID [--always]",
		Short: "Allow the command of request ID once (or always, for this exact command, directory and grants)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := approvals.AllowOnce
			if always {
				d = approvals.AllowAlways
			}
			return decideCLI(cmd, g, args[0], d)
		},
	}
	cmd.Flags().BoolVar(&always, "always", false, "remember: run this exact command in this directory with these grants without asking again")
	return cmd
}

func newApprovalsDenyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "deny ID",
		Short: "Refuse the command of request ID; it does not run",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decideCLI(cmd, g, args[0], approvals.Deny)
		},
	}
}

func decideCLI(cmd *cobra.Command, g *globals, id string, d approvals.Decision) error {
	r, err := decideApproval(cmd.Context(), g, id, d)
	if err != nil {
		return approvalsErr(err)
	}
	if g.json {
		return printJSON(cmd.OutOrStdout(), r)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n  command: %s\n", r.ID, d, r.Command)
	return nil
}

// approvalsGateway dials the gateway running on the data dir, or returns
// nil when none answers. Deciding through it wakes the waiting command at
// once; db-direct is still correct beside a gateway (its waiter re-reads
// the request every approvals.DefaultPoll), only slower to notice.
func approvalsGateway(ctx context.Context, g *globals) *controlapi.Client {
	p, err := g.paths()
	if err != nil {
		return nil
	}
	tok, err := auth.ReadTokenFile(p.OperatorToken())
	if err != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := controlapi.Dial(dctx, p.Socket(), tok)
	if err != nil {
		return nil
	}
	return c
}

func listApprovals(ctx context.Context, g *globals, all bool) ([]approvals.Request, error) {
	if c := approvalsGateway(ctx, g); c != nil {
		defer c.Close()
		res, err := controlapi.Invoke(ctx, c, api.ApprovalsList, api.ApprovalsListParams{All: all})
		if err != nil {
			return nil, approvalsFromRPC(err)
		}
		return res.Approvals, nil
	}
	st, done, err := openApprovals(ctx, g)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.List(ctx, approvals.ListOptions{All: all})
}

func decideApproval(ctx context.Context, g *globals, id string, d approvals.Decision) (approvals.Request, error) {
	if c := approvalsGateway(ctx, g); c != nil {
		defer c.Close()
		r, err := controlapi.Invoke(ctx, c, api.ApprovalsDecide, api.ApprovalsDecideParams{ID: id, Decision: d})
		if err != nil {
			return r, approvalsFromRPC(err)
		}
		return r, nil
	}
	st, done, err := openApprovals(ctx, g)
	if err != nil {
		return approvals.Request{}, err
	}
	defer done()
	return st.Decide(ctx, cliOperator, id, d)
}

// approvalsFromRPC turns the gateway's refusal back into the approvals
// sentinel the direct mode returns, so both modes exit alike.
func approvalsFromRPC(err error) error {
	var re *controlapi.RPCError
	if !errors.As(err, &re) {
		return fmt.Errorf("approvals: gateway: %w", err)
	}
	var data api.ApprovalErrorData
	if re.Data != nil {
		b, _ := json.Marshal(re.Data)
		_ = json.Unmarshal(b, &data)
	}
	sentinel, ok := map[string]error{
		"invalid": approvals.ErrInvalid, "not_found": approvals.ErrNotFound, "forbidden": approvals.ErrForbidden,
		"expired": approvals.ErrExpired, "resolved": approvals.ErrResolved,
	}[data.Code]
	if !ok {
		return fmt.Errorf("approvals: gateway: %w", err)
	}
	return gatewayRefusal{msg: re.Message, is: sentinel}
}

// gatewayRefusal is the gateway's message (it already names the approvals
// error) that still matches the sentinel with errors.Is.
type gatewayRefusal struct {
	msg string
	is  error
}

func (e gatewayRefusal) Error() string { return e.msg }
func (e gatewayRefusal) Unwrap() error { return e.is }
