package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/usage"
)

// Silent-tick spend the doctor warns on: over the last SilentWindow, a
// ticking source (Sentinel, heartbeat) that spent at least SilentMinTokens
// and whose silent ticks — decision calls whose tick delivered nothing —
// took more than SilentShare of its tokens.
const (
	SilentWindow    = 7 * 24 * time.Hour
	SilentMinTokens = 100_000
	SilentShare     = 0.8
)

// silentSpend warns when a source's silent ticks dominate its spend.
func silentSpend(ctx context.Context, p config.Paths, now time.Time) Check {
	const name = "silent ticks"
	if _, err := os.Stat(p.DB()); errors.Is(err, os.ErrNotExist) {
		return Check{Name: name, Status: OK, Detail: "no model calls recorded yet"}
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return Check{Name: name, Status: Warn, Detail: "usage unreadable: " + err.Error()}
	}
	defer db.Close()
	st, err := usage.Open(ctx, db, nil)
	if err != nil {
		return Check{Name: name, Status: Warn, Detail: "usage unreadable: " + err.Error()}
	}
	defer st.Close()
	rows, err := st.SilentShare(ctx, now.Add(-SilentWindow))
	if err != nil {
		return Check{Name: name, Status: Warn, Detail: "usage unreadable: " + err.Error()}
	}
	var bad, seen []string
	for _, r := range rows {
		if r.Key != "sentinel" && r.Key != "heartbeat" {
			continue
		}
		total := r.Tokens.Total()
		share := 0.0
		if total > 0 {
			share = float64(r.SilentTokens) / float64(total)
		}
		line := fmt.Sprintf("%s: %.0f%% of %d tokens on %d silent ticks", r.Key, 100*share, total, r.SilentCalls)
		seen = append(seen, line)
		if total >= SilentMinTokens && share > SilentShare {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		return Check{Name: name, Status: Warn, Detail: "over the last 7 days, silent ticks dominate spend — " + strings.Join(bad, "; "),
			Fix: "lengthen sentinel.interval or heartbeat.interval, trim HEARTBEAT.md, or cap ambient work: raven config set usage.caps '{\"ambient\":{\"daily_tokens\":200000}}' (raven usage shows the spend)"}
	}
	if len(seen) == 0 {
		return Check{Name: name, Status: OK, Detail: "no Sentinel or heartbeat calls in the last 7 days"}
	}
	return Check{Name: name, Status: OK, Detail: strings.Join(seen, "; ")}
}
