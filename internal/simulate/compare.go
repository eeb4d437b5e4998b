package simulate

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/config"
)

// Comparison is one scenario run under two configurations: the same
// owner, the same seed, so every difference is the configuration's.
type Comparison struct {
	A *Report `json:"a"`
	B *Report `json:"b"`
}

// Compare runs sc with o's configuration (A) and with other (B), one after
// the other: CPU, not wall time, is what a run costs.
func Compare(ctx context.Context, sc Scenario, o Options, other config.Config, otherName string) (*Comparison, error) {
	a, err := Run(ctx, sc, o)
	if err != nil {
		return nil, fmt.Errorf("simulate: A (%s): %w", cmpOr(o.BaseName, "default"), err)
	}
	ob := o
	ob.Base, ob.BaseName = &other, otherName
	b, err := Run(ctx, sc, ob)
	if err != nil {
		return nil, fmt.Errorf("simulate: B (%s): %w", otherName, err)
	}
	return &Comparison{A: a, B: b}, nil
}
