package usage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Groupings of a report.
const (
	ByOrigin = "origin"
	ByModel  = "model"
	ByDay    = "day"
)

// ErrBadGrouping and ErrBadSince are a report's input errors.
var (
	ErrBadGrouping = errors.New("usage: --by wants origin, model or day")
	ErrBadSince    = errors.New("usage: --since wants a date (2026-12-01) or a duration (7d, 24h, 90m)")
)

// Row is one group of calls.
type Row struct {
	Key    string `json:"key"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	Tokens Tokens `json:"tokens"`
	// SilentCalls and SilentTokens are the tick calls whose tick
	// delivered nothing.
	SilentCalls  int     `json:"silent_calls"`
	SilentTokens int64   `json:"silent_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	DurationMS   int64   `json:"duration_ms"`
}

// Report is `raven usage`: spend since a time grouped one way, and every
// cap against its period's spend.
type Report struct {
	Since time.Time   `json:"since"`
	By    string      `json:"by"`
	Rows  []Row       `json:"rows"`
	Total Row         `json:"total"`
	Caps  []CapStatus `json:"caps,omitempty"`
}

// BuildReport reads the calls since since and groups them by by; days are
// the owner's (loc).
func (s *Store) BuildReport(ctx context.Context, cfg Config, since, now time.Time, by string, loc *time.Location) (Report, error) {
	loc = orLocal(loc)
	if by == "" {
		by = ByOrigin
	}
	if by != ByOrigin && by != ByModel && by != ByDay {
		return Report{}, fmt.Errorf("%w (got %q)", ErrBadGrouping, by)
	}
	calls, err := s.Calls(ctx, since)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Since: since, By: by, Rows: []Row{}, Total: Row{Key: "total"}}
	idx := map[string]int{}
	for _, c := range calls {
		key := c.Origin
		switch by {
		case ByModel:
			key = c.Model
		case ByDay:
			key = c.At.In(loc).Format(time.DateOnly)
		}
		i, ok := idx[key]
		if !ok {
			i = len(rep.Rows)
			idx[key] = i
			rep.Rows = append(rep.Rows, Row{Key: key})
		}
		cost := cfg.Cost(c.Model, c.Tokens)
		for _, r := range []*Row{&rep.Rows[i], &rep.Total} {
			r.Calls++
			if !c.OK {
				r.Errors++
			}
			r.Tokens.add(c.Tokens)
			if c.Silent {
				r.SilentCalls++
				r.SilentTokens += c.Tokens.Total()
			}
			r.CostUSD += cost
			r.DurationMS += c.Duration.Milliseconds()
		}
	}
	if by != ByDay {
		sort.SliceStable(rep.Rows, func(a, b int) bool { return rep.Rows[a].Tokens.Total() > rep.Rows[b].Tokens.Total() })
	}
	if rep.Caps, err = s.CapStatuses(ctx, cfg, now, loc); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// ParseSince reads --since: a date (YYYY-MM-DD, midnight in loc), an
// RFC 3339 time, or a duration back from now (7d, 24h, 90m). Empty: 7 days.
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	loc = orLocal(loc)
	s = strings.TrimSpace(s)
	if s == "" {
		return now.Add(-7 * 24 * time.Hour), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 3660 {
			return time.Time{}, fmt.Errorf("%w (got %q)", ErrBadSince, s)
		}
		return now.AddDate(0, 0, -n), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%w (got %q)", ErrBadSince, s)
	}
	return now.Add(-d), nil
}

// SilentShare is the part of an origin's tokens spent on silent ticks,
// over the calls since since: what `raven doctor` warns on.
func (s *Store) SilentShare(ctx context.Context, since time.Time) ([]Row, error) {
	rep, err := s.BuildReport(ctx, Config{}, since, since, ByOrigin, time.UTC)
	if err != nil {
		return nil, err
	}
	return rep.Rows, nil
}
