package sentinel

import (
	"context"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/statefile"
)

// learnRoutines is the assembler's default routine source. Weekly patterns
// need weeks of history, far more than the planner's tail, so it reads its
// own longer tail of HISTORY.md when configured to.
func learnRoutines(historyPath string, cfg Config, clk clock.Clock, log *slog.Logger) func(string) []Routine {
	learn := routineLearner(historyPath, cfg, clk, log)
	return func(tail string) []Routine { return toRoutines(learn(tail)) }
}

// routineLearner learns from tail, or from the learner's own longer tail
// of HISTORY.md when configured to read more than the planner's.
func routineLearner(historyPath string, cfg Config, clk clock.Clock, log *slog.Logger) func(string) []predictor.Routine {
	l := predictor.NewRoutineLearner(predictor.LearnerOptions{
		MinWeeks: cfg.Routines.MinWeeks, MinDays: cfg.Routines.MinDays, MaxRoutines: cfg.Routines.Max,
	})
	loc := cfg.Policy.Location
	return func(tail string) []predictor.Routine {
		history := tail
		if cfg.Routines.TailBytes > cfg.HistoryTailBytes {
			if b, err := memory.TailBytes(historyPath, cfg.Routines.TailBytes); err != nil {
				log.Debug("sentinel: routines read the planner's tail only", "err", err)
			} else {
				history = string(b)
			}
		}
		return l.Learn(history, clk.Now(), loc)
	}
}

func toRoutines(rs []predictor.Routine) []Routine {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Routine, len(rs))
	for i, r := range rs {
		desc := r.Description
		if r.Example != "" {
			desc += ` (e.g. "` + r.Example + `")`
		}
		out[i] = Routine{Description: desc, When: r.When, Confidence: r.Confidence, LastSeen: r.LastSeen, Samples: r.Samples}
	}
	return out
}

// newBehaviors builds the behaviors extractor when it is enabled and has a
// model and a message source; otherwise nil, said once in the log.
func newBehaviors(o SystemOptions, store *statefile.Store, log *slog.Logger) (*predictor.BehaviorsExtractor, error) {
	bc := o.Config.Behaviors
	switch {
	case !bc.Enabled:
		return nil, nil
	case o.Provider == nil:
		log.Info("sentinel: behaviors extractor enabled but no model is configured; it stays off")
		return nil, nil
	case o.Messages == nil:
		log.Info("sentinel: behaviors extractor enabled but no session store is wired; it stays off")
		return nil, nil
	}
	messages := func(ctx context.Context, since time.Time, limit int) ([]predictor.Message, error) {
		es, err := o.Messages(ctx, since, limit)
		if err != nil {
			return nil, err
		}
		out := make([]predictor.Message, len(es))
		for i, e := range es {
			out[i] = predictor.Message{At: e.At, Conversation: e.Conversation, Role: string(e.Role), Content: e.Content}
		}
		return out, nil
	}
	idle := bc.Idle.D()
	// The owner's last message anywhere: the session summaries carry it;
	// without them the recent messages themselves tell.
	lastOwner := func(ctx context.Context) (time.Time, error) {
		since := o.Clock.Now().Add(-idle)
		var last time.Time
		if o.Sessions != nil {
			ss, err := o.Sessions(ctx, since)
			if err != nil {
				return time.Time{}, err
			}
			for _, s := range ss {
				if s.LastUserAt.After(last) {
					last = s.LastUserAt
				}
			}
			return last, nil
		}
		ms, err := messages(ctx, since, bc.MaxMessages)
		if err != nil {
			return time.Time{}, err
		}
		for _, m := range ms {
			if m.Role == "user" && m.At.After(last) {
				last = m.At
			}
		}
		return last, nil
	}
	return predictor.NewBehaviorsExtractor(predictor.BehaviorsOptions{
		Path: o.Paths.Behaviors, Store: store, Provider: o.Provider, Model: o.Model,
		Messages: messages, LastOwnerActivity: lastOwner,
		Idle: idle, Interval: bc.Interval.D(), MaxMessages: bc.MaxMessages,
		Clock: o.Clock, Logger: log,
	})
}
