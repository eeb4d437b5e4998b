package usage

import (
	"context"
	"time"
)

// Periods of a cap.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// Units of a cap.
const (
	UnitTokens = "tokens"
	UnitUSD    = "usd"
)

// CapStatus is one cap against the spend of its period.
type CapStatus struct {
	Scope  string  `json:"scope"`
	Period string  `json:"period"`
	Unit   string  `json:"unit"`
	Limit  float64 `json:"limit"`
	Used   float64 `json:"used"`
	// Reached: Used is at or over Limit.
	Reached bool `json:"reached"`
	// Enforced caps pause ambient work when reached; a cap on a requested
	// origin (user, cron, …) is shown only.
	Enforced bool `json:"enforced"`
	// PeriodStart and ResumeAt bound the period in the owner's zone.
	PeriodStart time.Time `json:"period_start"`
	ResumeAt    time.Time `json:"resume_at"`
}

// periods are the day and month now falls in, in loc.
type periods struct {
	dayStart, nextDay, monthStart, nextMonth time.Time
}

func periodsAt(now time.Time, loc *time.Location) periods {
	if loc == nil {
		loc = time.Local
	}
	t := now.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	month := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
	return periods{dayStart: day, nextDay: day.AddDate(0, 0, 1), monthStart: month, nextMonth: month.AddDate(0, 1, 0)}
}

// inScope reports whether origin's calls count toward scope.
func inScope(scope, origin string) bool {
	switch scope {
	case ScopeTotal:
		return true
	case ScopeAmbient:
		return IsAmbient(origin)
	}
	return scope == origin
}

// enforced reports whether reaching a cap on scope pauses ambient work.
func enforced(scope string) bool {
	return scope == ScopeTotal || scope == ScopeAmbient || IsAmbient(scope)
}

// pauses reports whether a reached cap on scope pauses origin.
func pauses(scope, origin string) bool {
	return IsAmbient(origin) && enforced(scope) && inScope(scope, origin)
}

// CapStatuses evaluates every configured cap against the spend of the day
// and month now falls in (loc: the owner's zone), scopes in name order.
func (s *Store) CapStatuses(ctx context.Context, cfg Config, now time.Time, loc *time.Location) ([]CapStatus, error) {
	if len(cfg.Caps) == 0 {
		return nil, nil
	}
	p := periodsAt(now, loc)
	sp, err := s.periodSpend(ctx, p.dayStart, p.monthStart)
	if err != nil {
		return nil, err
	}
	return evaluate(cfg, sp, p), nil
}

func evaluate(cfg Config, sp []spend, p periods) []CapStatus {
	var out []CapStatus
	for _, scope := range sortedKeys(cfg.Caps) {
		c := cfg.Caps[scope]
		var dayTok, monthTok, dayUSD, monthUSD float64
		for _, x := range sp {
			if !inScope(scope, x.origin) {
				continue
			}
			dayTok += float64(x.day.Total())
			monthTok += float64(x.month.Total())
			dayUSD += cfg.Cost(x.model, x.day)
			monthUSD += cfg.Cost(x.model, x.month)
		}
		add := func(period, unit string, limit, used float64) {
			if limit <= 0 {
				return
			}
			st := CapStatus{Scope: scope, Period: period, Unit: unit, Limit: limit, Used: used, Reached: used >= limit,
				Enforced: enforced(scope), PeriodStart: p.dayStart, ResumeAt: p.nextDay}
			if period == PeriodMonth {
				st.PeriodStart, st.ResumeAt = p.monthStart, p.nextMonth
			}
			out = append(out, st)
		}
		add(PeriodDay, UnitTokens, float64(c.DailyTokens), dayTok)
		add(PeriodMonth, UnitTokens, float64(c.MonthlyTokens), monthTok)
		add(PeriodDay, UnitUSD, c.DailyUSD, dayUSD)
		add(PeriodMonth, UnitUSD, c.MonthlyUSD, monthUSD)
	}
	return out
}
