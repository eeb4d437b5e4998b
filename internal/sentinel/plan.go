package sentinel

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
)

// PlanWindows shape the slots of a day plan. Zero values take the defaults.
type PlanWindows struct {
	// RoutineLead opens a routine's slot this long before its usual time
	// (default 30m), so the nudge comes before the habit, not after it;
	// RoutineTail closes it this long after (default 30m). The default
	// hour-wide window always contains a tick of the default 30m interval.
	RoutineLead time.Duration
	RoutineTail time.Duration
	// DeadlineLead opens a timed deadline's slot this long before it is
	// due (default 3h).
	DeadlineLead time.Duration
	// DayStart and DayEnd bound untimed deadlines and the heads-up for
	// tomorrow's (defaults 09:00 and 21:00; tomorrow's heads-up opens at
	// DayEnd-3h).
	DayStart time.Duration
	DayEnd   time.Duration
}

func (w PlanWindows) withDefaults() PlanWindows {
	if w.RoutineLead <= 0 {
		w.RoutineLead = 30 * time.Minute
	}
	if w.RoutineTail <= 0 {
		w.RoutineTail = 30 * time.Minute
	}
	if w.DeadlineLead <= 0 {
		w.DeadlineLead = 3 * time.Hour
	}
	if w.DayStart <= 0 {
		w.DayStart = 9 * time.Hour
	}
	if w.DayEnd <= w.DayStart {
		w.DayEnd = 21 * time.Hour
	}
	return w
}

// BuildPlan lays out day's intended proactive fires, a pure function of
// its inputs:
//   - each routine that recurs on day gets a recurring, low-priority slot
//     around its usual time; it fires without a model call;
//   - each deadline due on day gets a one-shot, high-priority slot before
//     it is due, and each due the next day a medium heads-up in the
//     evening; those go to the planner, which can tell "not done yet" from
//     "already finished", and only the high ones may be blind-fired when
//     the planner is down.
//
// Slots are sorted by start; IDs are stable for a given day and input.
func BuildPlan(day time.Time, loc *time.Location, routines []predictor.Routine, deadlines []attention.Item, w PlanWindows) []PlanSlot {
	if loc == nil {
		loc = time.Local
	}
	w = w.withDefaults()
	d := day.In(loc)
	midnight := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	next := midnight.AddDate(0, 0, 1)
	at := func(off time.Duration) time.Time { return clampTime(midnight.Add(off), midnight, next) }
	var slots []PlanSlot
	for _, r := range routines {
		if !recursOn(r, d.Weekday()) {
			continue
		}
		usual := time.Date(d.Year(), d.Month(), d.Day(), r.Minute/60, r.Minute%60, 0, 0, loc)
		desc := strings.TrimSpace(r.Description)
		if desc == "" {
			desc = strings.Join(r.Keywords, ", ")
		}
		if desc == "" {
			continue
		}
		id := "routine-" + slug(desc)
		slots = append(slots, PlanSlot{
			ID: id, Topic: id, Recurring: true, Priority: PriorityLow,
			Start:   clampTime(usual.Add(-w.RoutineLead), midnight, next),
			End:     clampTime(usual.Add(w.RoutineTail), midnight, next),
			Message: fmt.Sprintf("Around now you usually get to: %s (%s). Want a hand with it?", desc, r.When),
		})
	}
	for _, it := range deadlines {
		due := it.At.In(loc)
		switch {
		case sameDay(due, midnight):
			s := PlanSlot{Deadline: true, Priority: PriorityHigh, Start: at(w.DayStart), End: at(w.DayEnd)}
			if it.HasTime {
				s.End = clampTime(due, midnight, next)
				s.Start = clampTime(due.Add(-w.DeadlineLead), midnight, next)
				if s.Start.Before(at(w.DayStart)) && at(w.DayStart).Before(s.End) {
					s.Start = at(w.DayStart) // no pre-dawn nudge while the owner can still act later
				}
				s.Message = "Due today at " + due.Format("15:04") + ": " + it.Text
			} else {
				s.Message = "Due today: " + it.Text
			}
			s.ID = deadlineID(midnight, it)
			s.Topic = s.ID
			slots = append(slots, s)
		case sameDay(due, next):
			id := deadlineID(midnight, it)
			slots = append(slots, PlanSlot{
				ID: id, Topic: id, Deadline: true, Priority: PriorityMedium,
				Start: at(w.DayEnd - 3*time.Hour), End: at(w.DayEnd),
				Message: "Heads-up, due tomorrow: " + it.Text,
			})
		}
	}
	slots = slices.DeleteFunc(slots, func(s PlanSlot) bool { return !s.Start.Before(s.End) })
	slices.SortStableFunc(slots, func(a, b PlanSlot) int { return a.Start.Compare(b.Start) })
	return slots
}

func recursOn(r predictor.Routine, wd time.Weekday) bool {
	switch r.Cadence {
	case predictor.CadenceDaily:
		return true
	case predictor.CadenceWeekdays:
		return wd != time.Saturday && wd != time.Sunday
	case predictor.CadenceWeekly:
		return slices.Contains(r.Weekdays, wd)
	}
	return false
}

func sameDay(t, midnight time.Time) bool {
	return t.Year() == midnight.Year() && t.YearDay() == midnight.YearDay()
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// deadlineID is stable for one item on one plan day, so a slot fired
// today is recognised on every later tick.
func deadlineID(day time.Time, it attention.Item) string {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(it.Text)))
	return fmt.Sprintf("deadline-%s-%08x", day.Format("0102"), h.Sum32())
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// RenderPlan is the "Today's plan" section body: one line per slot, no
// relative times, so it stays the same all day and ticks do not rewrite it.
func RenderPlan(slots []PlanSlot) string {
	var b strings.Builder
	for _, s := range slots {
		kind := "routine, fires on its own"
		if s.Deadline {
			kind = "deadline, the planner decides"
		}
		fmt.Fprintf(&b, "- %s–%s %s (%s, %s)\n", s.Start.Format("15:04"), endClock(s), s.Message, kind, orLow(s.Priority))
	}
	return b.String()
}

func endClock(s PlanSlot) string {
	if s.End.Sub(s.Start) > 0 && s.End.Hour() == 0 && s.End.Minute() == 0 {
		return "24:00"
	}
	return s.End.Format("15:04")
}

// DailyPlanOptions are the daily-plan producer's sources.
type DailyPlanOptions struct {
	// Routines learns routines from the history tail (the RoutineLearner);
	// it runs at most once a day. Nil: no routine slots.
	Routines func(history string) []predictor.Routine
	// Deadlines finds the dated lines (the attention producer).
	Deadlines attention.Deadlines
	// Input reads memory and history when no attention update supplied
	// them this day.
	Input    func(ctx context.Context) attention.Input
	Windows  PlanWindows
	Location *time.Location
	Clock    clock.Clock
	Logger   *slog.Logger
}

// DailyPlan is the daily-plan producer. As an attention producer it writes
// the day's plan into attention.md's "Today's plan" section for the owner;
// Slots feeds the runner's scheduled-fire fast path from the same
// computation. Routines are learned once a day; deadlines are re-read on
// every refresh, so one noted at noon is still planned today.
type DailyPlan struct {
	o DailyPlanOptions

	mu          sync.Mutex
	day         string
	slots       []PlanSlot
	routineDay  string
	routineList []predictor.Routine
}

// NewDailyPlan returns a producer.
func NewDailyPlan(o DailyPlanOptions) *DailyPlan {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &DailyPlan{o: o}
}

// Section is "Today's plan".
func (*DailyPlan) Section() string { return attention.SectionPlan }

// Produce plans in.Now's day from in and renders it.
func (p *DailyPlan) Produce(_ context.Context, in attention.Input) (string, error) {
	return RenderPlan(p.plan(in)), nil
}

// Refresh replans today from fresh sources (when attention.md is not
// maintained, so Produce does not run).
func (p *DailyPlan) Refresh(ctx context.Context) {
	if p.o.Input != nil {
		in := p.o.Input(ctx)
		in.Now = p.o.Clock.Now()
		p.plan(in)
	}
}

// Slots returns now's day plan (the runner's PlanSlots). A day not yet
// planned is planned from fresh sources.
func (p *DailyPlan) Slots(now time.Time) []PlanSlot {
	key := dayKey(now.In(p.o.Location))
	p.mu.Lock()
	if p.day == key {
		s := p.slots
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	in := attention.Input{Now: now, Location: p.o.Location}
	if p.o.Input != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		in = p.o.Input(ctx)
		cancel()
		in.Now = now
	}
	return p.plan(in)
}

func (p *DailyPlan) plan(in attention.Input) []PlanSlot {
	if in.Location == nil {
		in.Location = p.o.Location
	}
	key := dayKey(in.Now.In(p.o.Location))
	routines := p.routines(key, in.History)
	var items []attention.Item
	safe(p.o.Logger, "plan_deadlines", func() { items = p.o.Deadlines.Items(in) })
	slots := BuildPlan(in.Now, p.o.Location, routines, items, p.o.Windows)
	p.mu.Lock()
	p.day, p.slots = key, slots
	p.mu.Unlock()
	return slots
}

func (p *DailyPlan) routines(day, history string) []predictor.Routine {
	if p.o.Routines == nil {
		return nil
	}
	p.mu.Lock()
	if p.routineDay == day {
		rs := p.routineList
		p.mu.Unlock()
		return rs
	}
	p.mu.Unlock()
	var rs []predictor.Routine
	safe(p.o.Logger, "plan_routines", func() { rs = p.o.Routines(history) })
	p.mu.Lock()
	p.routineDay, p.routineList = day, rs
	p.mu.Unlock()
	return rs
}
