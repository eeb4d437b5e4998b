package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
)

func newNudgesCmd(g *globals) *cobra.Command {
	var last int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nudges",
		Short: "List recent proactive nudges and the owner's verdict on each (sentinel/feedback.jsonl)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if last < 1 {
				return usageErr(fmt.Errorf("--last must be at least 1"))
			}
			p, err := g.paths()
			if err != nil {
				return err
			}
			tr := feedback.NewTracker(p.Feedback(), feedback.Options{Clock: clock.Real()})
			ns, err := tr.Nudges(last)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON || g.json {
				return printJSON(out, ns)
			}
			if len(ns) == 0 {
				fmt.Fprintf(out, "no nudges recorded yet (%s)\n", p.Feedback())
				return nil
			}
			printNudges(out, ns)
			return nil
		},
	}
	cmd.Flags().IntVar(&last, "last", 20, "how many recent nudges")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(newNudgesFeedbackCmd(g))
	return cmd
}

func printNudges(w io.Writer, ns []feedback.NudgeSummary) {
	for _, n := range ns {
		verdict := n.Verdict
		if verdict == "" {
			verdict = "-"
		}
		fmt.Fprintf(w, "%s  %-20s %-12s %-10s %s\n", n.Time.Local().Format("2006-01-02 15:04"), n.NudgeID, n.Action, verdict, n.Session)
		if text := firstNonEmptyCLI(n.Content, n.Topic); text != "" {
			fmt.Fprintf(w, "    %s\n", oneLineCLI(text, 100))
		}
	}
}

func newNudgesFeedbackCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "feedback NUDGE_ID accepted|dismissed|neutral",
		Short: "Record the owner's verdict on a nudge (feeds the adaptive policy)",
		Long: "Appends the verdict to sentinel/feedback.jsonl and updates the shared policy state,\n" +
			"exactly as the nudge_feedback tool does. An unknown NUDGE_ID is an error (exit 2).",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, verdict := strings.TrimSpace(args[0]), args[1]
			if !feedback.IsVerdict(verdict) {
				return usageErr(fmt.Errorf("verdict %q: want accepted, dismissed or neutral", verdict))
			}
			sys, _, done, err := sentinelEnv(cmd.Context(), g, nil)
			if err != nil {
				return err
			}
			defer done()
			rec, err := sys.RecordVerdict(cmd.Context(), id, verdict, "", reason)
			if errors.Is(err, feedback.ErrUnknownNudge) {
				return usageErr(fmt.Errorf("unknown nudge ID %q (see `raven nudges`)", id))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s for %s (topic %s)\n", rec.Event, rec.NudgeID, rec.Topic)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the verdict)")
	return cmd
}

func firstNonEmptyCLI(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func oneLineCLI(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}
