package sentinel

import (
	"context"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/statefile"
)

// routineStore is the one routine source of the assembler and the daily
// plan: learned routines kept in sentinel/routines.json and updated from
// what HISTORY.md gained since the last tick, instead of re-learned from
// its tail on every one.
func routineStore(paths Paths, cfg Config, clk clock.Clock, log *slog.Logger) *predictor.RoutineStore {
	return predictor.NewRoutineStore(predictor.RoutineStoreOptions{
		Path: paths.Routines, HistoryPath: paths.History, TailBytes: max(cfg.Routines.TailBytes, cfg.HistoryTailBytes),
		Learner: predictor.NewRoutineLearner(predictor.LearnerOptions{
			MinWeeks: cfg.Routines.MinWeeks, MinDays: cfg.Routines.MinDays, MaxRoutines: cfg.Routines.Max,
		}),
		Location: cfg.Policy.Location, Clock: clk, Logger: log,
	})
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
