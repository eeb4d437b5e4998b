package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

func newNudgesCmd(g *globals) *cobra.Command {
	var last int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nudges",
		Short: "List recent proactive nudges and their feedback (sentinel/feedback.jsonl)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			recs, err := readFeedback(p.Feedback(), last)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintf(out, "no nudges recorded yet (%s)\n", p.Feedback())
				return nil
			}
			for _, r := range recs {
				fmt.Fprintf(out, "%-25s %-20s %-10s %s\n", str(r, "time", "at", "ts"), str(r, "nudge_id", "id"), str(r, "event", "kind", "verdict", "status"), oneLineCLI(str(r, "content", "message", "reason"), 80))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&last, "last", 20, "how many recent records")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(newNudgesFeedbackCmd(g))
	return cmd
}

func newNudgesFeedbackCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "feedback NUDGE_ID accepted|dismissed|neutral",
		Short: "Record the owner's verdict on a nudge (feeds the adaptive policy)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, verdict := args[0], args[1]
			switch verdict {
			case policy.VerdictAccepted, policy.VerdictDismissed, policy.VerdictNeutral:
			default:
				return usageErr(fmt.Errorf("verdict %q: want accepted, dismissed or neutral", verdict))
			}
			sys, p, err := sentinelEnv(g, cmd.OutOrStdout(), false)
			if err != nil {
				return err
			}
			recs, err := readFeedback(p.Feedback(), 1<<20)
			if err != nil {
				return err
			}
			known := false
			for _, r := range recs {
				if str(r, "nudge_id", "id") == id {
					known = true
				}
			}
			if !known {
				return usageErr(fmt.Errorf("unknown nudge ID %q (see `raven nudges`)", id))
			}
			// TODO(feedback): also append the verdict through feedback.Tracker once it lands.
			if err := sys.Policy.RecordOutcome(cmd.Context(), id, verdict); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s for %s\n", verdict, id)
			return nil
		},
	}
}

// readFeedback returns the last n records of feedback.jsonl as generic
// objects, reading only the file's tail.
func readFeedback(path string, n int) ([]map[string]any, error) {
	tail, err := sentinel.ReadTail(path, min(n*2048, 64<<20))
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(tail), []byte{'\n'}) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m != nil {
			out = append(out, m)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
	}
	return ""
}

func oneLineCLI(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
