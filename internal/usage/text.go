package usage

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteText prints r as `raven usage` shows it: one row per group, a
// total, and every cap against its period's spend.
func (r Report) WriteText(w io.Writer, loc *time.Location) error {
	loc = orLocal(loc)
	fmt.Fprintf(w, "model calls since %s, by %s\n", r.Since.In(loc).Format("2006-01-02 15:04 MST"), r.By)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tcalls\terrors\tinput\tcached\toutput\tsilent calls\tsilent tokens\tcost USD\t\n", r.By)
	for _, row := range append(append([]Row(nil), r.Rows...), r.Total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", row.Key, row.Calls, row.Errors, row.Tokens.Input,
			row.Tokens.Cached, row.Tokens.Output, row.SilentCalls, row.SilentTokens, row.CostUSD)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Caps) == 0 {
		_, err := fmt.Fprintln(w, "caps: none (set usage.caps, e.g. raven config set usage.caps '{\"ambient\":{\"daily_tokens\":200000}}')")
		return err
	}
	fmt.Fprintln(w, "caps (ambient work pauses at an enforced cap; requested work never does):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scope\tperiod\tused\tcap\tstate\tresets\n")
	for _, c := range r.Caps {
		used, limit := fmt.Sprintf("%.0f tokens", c.Used), fmt.Sprintf("%.0f tokens", c.Limit)
		if c.Unit == UnitUSD {
			used, limit = fmt.Sprintf("$%.4f", c.Used), fmt.Sprintf("$%.2f", c.Limit)
		}
		state := fmt.Sprintf("%.0f%%", 100*c.Used/c.Limit)
		switch {
		case c.Reached && c.Enforced:
			state += " REACHED: ambient paused"
		case c.Reached:
			state += " reached (shown only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Scope, c.Period, used, limit, state, c.ResumeAt.In(loc).Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}
