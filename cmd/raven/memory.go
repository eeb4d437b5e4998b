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
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memindex"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func newMemoryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Search Raven's memory and see what it wrote to MEMORY.md",
		Long: `Raven's memory is MEMORY.md (yours to edit), HISTORY.md, past conversations and
the workspace's notes. 'raven memory search' looks through all of them (the same
index the model's memory_search tool reads); 'raven memory log' lists every line
Raven's remember tool added to MEMORY.md, and when. Runs beside a gateway.`,
	}
	cmd.AddCommand(newMemorySearchCmd(g), newMemoryLogCmd(g))
	return cmd
}

// memoryHit is one hit of `raven memory search --json`.
type memoryHit struct {
	memindex.Hit
	Source string `json:"source"`
}

func newMemorySearchCmd(g *globals) *cobra.Command {
	var since string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search HISTORY.md, past conversations and workspace notes",
		Long: `Prints the best-matching passages, each dated and with where it came from
(HISTORY.md line, conversation, note file and line). Every word must match; when
no passage has them all, any word may. Quotes and operators are plain text.

--since takes a date (2026-11-30), an RFC 3339 time, or a span back from now
(36h, 7d, 2w).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(fmt.Errorf("%s: want a query (see --help)", cmd.CommandPath()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			query := strings.Join(args, " ")
			from, err := memindex.ParseSince(since, time.Now())
			if err != nil {
				return usageErr(err)
			}
			if len(memindex.Terms(query)) == 0 {
				return usageErr(memindex.ErrEmptyQuery)
			}
			if limit < 1 || limit > memindex.MaxLimit {
				return usageErr(fmt.Errorf("--limit must be 1..%d", memindex.MaxLimit))
			}
			var hits []memindex.Hit
			err = withMemory(cmd.Context(), g, func(ix *memindex.Index, _ *memindex.Writer) error {
				hits, err = ix.Search(cmd.Context(), memindex.Query{Text: query, Since: from, Limit: limit})
				return err
			})
			if errors.Is(err, errNoDataDir) {
				err = nil
			}
			if errors.Is(err, memindex.ErrEmptyQuery) {
				return usageErr(err)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON || g.json {
				list := make([]memoryHit, len(hits))
				for i, h := range hits {
					list[i] = memoryHit{Hit: h, Source: h.Source()}
				}
				return printJSON(out, list)
			}
			_, err = io.WriteString(out, memindex.FormatHits(query, hits))
			if len(hits) == 0 {
				fmt.Fprintln(out)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries from then on (2026-11-30, RFC 3339, or 36h / 7d back)")
	cmd.Flags().IntVar(&limit, "limit", memindex.DefaultLimit, "at most this many results")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newMemoryLogCmd(g *globals) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List what Raven wrote to MEMORY.md, and when (oldest first)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var log []memindex.Written
			err := withMemory(cmd.Context(), g, func(_ *memindex.Index, w *memindex.Writer) error {
				var err error
				log, err = w.Log(cmd.Context(), limit)
				return err
			})
			if errors.Is(err, errNoDataDir) {
				log, err = []memindex.Written{}, nil
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON || g.json {
				return printJSON(out, log)
			}
			if len(log) == 0 {
				fmt.Fprintln(out, "Raven has written nothing to MEMORY.md yet.")
				return nil
			}
			for _, wr := range log {
				from := wr.Origin
				if wr.Conversation != "" {
					from += " in " + wr.Conversation
				}
				fmt.Fprintf(out, "%s  ## %s  (%s)\n  %s\n", wr.At.Local().Format("2006-01-02 15:04"), wr.Section, from, wr.Text)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "only the last N writes (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// errNoDataDir: there is no data dir, so nothing to search or list (and
// none is created for a mistyped --data-dir).
var errNoDataDir = errors.New("no data dir")

// withMemory opens the data dir's memory index and writer for one command.
func withMemory(ctx context.Context, g *globals, fn func(*memindex.Index, *memindex.Writer) error) error {
	p, err := g.paths()
	if err != nil {
		return err
	}
	if _, err := os.Stat(p.Root); errors.Is(err, fs.ErrNotExist) {
		return errNoDataDir
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return err
	}
	defer db.Close()
	sessions, err := session.Open(ctx, db)
	if err != nil {
		return err
	}
	ix, w, err := runtime.OpenMemory(ctx, p, db, sessions, clock.Real(), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return fn(ix, w)
}
