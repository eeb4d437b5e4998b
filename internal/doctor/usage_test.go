package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/usage"
)

// The doctor warns when a ticking source's silent ticks took more than
// SilentShare of at least SilentMinTokens in the last week, and not below
// either threshold.
func TestSilentSpend(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name             string
		silent, speaking int // 10,000-token heartbeat ticks of each kind
		want             Status
	}{
		{"no calls", 0, 0, OK},
		{"mostly silent, little spend", 9, 0, OK},
		{"mostly silent, much spend", 19, 1, Warn},
		{"half silent", 10, 10, OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := config.NewPaths(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			db, err := sqlitedb.Open(p.DB())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st, err := usage.Open(context.Background(), db, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for i := 0; i < tc.silent+tc.speaking; i++ {
				if _, err := st.Record(context.Background(), usage.Call{At: now.Add(-time.Duration(i) * time.Hour), Origin: "heartbeat", Model: "openai/x",
					Tokens: usage.Tokens{Input: 9000, Output: 1000}, OK: true, Tick: true, Silent: i < tc.silent}); err != nil {
					t.Fatal(err)
				}
			}
			if c := silentSpend(context.Background(), p, now); c.Status != tc.want {
				t.Fatalf("%+v, want %s", c, tc.want)
			}
		})
	}
}
