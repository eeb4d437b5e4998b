package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// cliSurface is the surface name `raven inbox clear` delivers to.
const cliSurface = "cli"

// inboxListing is `raven inbox --json`.
type inboxListing struct {
	Pending int           `json:"pending"`
	Items   []outbox.Item `json:"items"`
}

func newInboxCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "List proactive messages that reached no surface and wait for you (the outbox)",
		Long: `Lists the proactive messages (Sentinel nudges, cron and heartbeat results,
system notices) that found no attached surface and wait in the outbox, oldest
first. Listing does not mark them read: the next chat or TUI attach shows
them, or 'raven inbox clear' marks them delivered. Runs beside a gateway.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, done, err := openOutbox(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer done()
			var items []outbox.Item
			if st != nil {
				if items, err = st.Pending(cmd.Context(), 0); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON || g.json {
				if items == nil {
					items = []outbox.Item{}
				}
				return printJSON(out, inboxListing{Pending: len(items), Items: items})
			}
			printInbox(out, items)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(newInboxClearCmd(g))
	return cmd
}

func newInboxClearCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "clear [ID...]",
		Short: "Mark waiting messages (all, or the given ids) delivered to the cli",
		RunE: func(cmd *cobra.Command, ids []string) error {
			st, done, err := openOutbox(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			if st == nil {
				if len(ids) > 0 {
					return fmt.Errorf("inbox clear %s: %w", ids[0], outbox.ErrNotFound)
				}
				fmt.Fprintln(out, "inbox empty")
				return nil
			}
			if len(ids) == 0 {
				items, err := st.Pending(cmd.Context(), 0)
				if err != nil {
					return err
				}
				for _, it := range items {
					ids = append(ids, it.ID)
				}
			}
			cleared, skipped := 0, 0
			for _, id := range ids {
				switch err := st.MarkDelivered(cmd.Context(), id, cliSurface); {
				case err == nil:
					cleared++
				case errors.Is(err, outbox.ErrAlreadyDelivered), errors.Is(err, outbox.ErrClaimed):
					// Another surface is showing it or showed it: the
					// owner has it, or is about to.
					skipped++
					fmt.Fprintf(cmd.ErrOrStderr(), "raven: %v\n", err)
				default:
					return err
				}
			}
			fmt.Fprintf(out, "cleared %d message(s)", cleared)
			if skipped > 0 {
				fmt.Fprintf(out, "; %d taken by another surface", skipped)
			}
			fmt.Fprintln(out)
			return nil
		},
	}
}

// openOutbox opens the outbox in the data dir's raven.db. A data dir with no
// database yet has an empty outbox: st is nil and nothing is created.
func openOutbox(ctx context.Context, g *globals) (st *outbox.Store, done func(), err error) {
	p, err := g.paths()
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(p.DB()); errors.Is(err, fs.ErrNotExist) {
		return nil, func() {}, nil
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return nil, nil, err
	}
	st, err = outbox.Open(ctx, db, outbox.Options{Clock: clock.Real(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return st, func() { db.Close() }, nil
}

func printInbox(w io.Writer, items []outbox.Item) {
	if len(items) == 0 {
		fmt.Fprintln(w, "inbox empty")
		return
	}
	fmt.Fprintf(w, "%d message(s) waiting, oldest first:\n", len(items))
	for _, it := range items {
		label := string(it.Origin)
		if it.Kind != "" {
			label += "/" + it.Kind
		}
		fmt.Fprintf(w, "\n%s  %-18s %s", it.CreatedAt.Local().Format("2006-01-02 15:04"), label, it.ID)
		if it.ClaimedBy != "" {
			fmt.Fprintf(w, "  (being shown on %s)", it.ClaimedBy)
		}
		fmt.Fprintln(w)
		for _, line := range strings.Split(strings.TrimRight(it.Content, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}
