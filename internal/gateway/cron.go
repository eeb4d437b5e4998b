package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/spine"
)

// StartCron runs the cron service restricted to channels (empty: every job)
// and registers the cron tool. A fire writes the shared NudgePolicy ledger
// and a neutral feedback record, and wakes the heartbeat.
func (a *App) StartCron(ctx context.Context, channels ...string) error {
	svc, store, err := a.buildCron(channels, nil)
	if err != nil {
		return err
	}
	a.Tools.Register(cron.NewTool(store, a.Clock, svc.Poke))
	if a.Config.Cron.Enabled {
		a.Go("cron", svc.Run)
	}
	return nil
}

// buildCron assembles the cron service every surface shares (gateway,
// chat, `raven cron serve`): turns through the scheduler when a model is
// configured (else verbatim delivery), owner activity from the session
// store resetting decay, fires coupled to the Sentinel's ledger, and the
// heartbeat woken after each fire. wrap, when set, decorates the handler
// (process tests only).
func (a *App) buildCron(channels []string, wrap func(cron.Handler) cron.Handler) (*cron.Service, *cron.Store, error) {
	cc := a.Config.Cron
	log := a.Log.With("component", "cron")
	store := cron.NewStore(a.Paths.CronJobs(), a.Clock, log, cc.LockTimeout.D())
	var submit func(spine.TurnRequest) (*spine.Ticket, error)
	if a.Provider != nil {
		submit = a.Scheduler.Submit
	}
	fh := cron.NewFireHandler(cron.FireOptions{
		Hub: a.Hub, Submit: submit, Forward: a.Config.Channels.Forward,
		LastChatID: func(ch string) (string, bool) { return a.Sessions.LastChatID(a.ctx, ch) },
		RecordFire: a.recordCronFire,
		OnFired: func(jobID string) {
			a.emit("cron.fired", "cron:"+jobID, map[string]any{"job_id": jobID})
			if a.Wake != nil {
				a.Wake.RequestWakeNow("cron " + jobID + " fired")
			}
		},
		Logger: log,
	})
	handler := cron.Handler(fh.Handle)
	if wrap != nil {
		handler = wrap(handler)
	}
	svc, err := cron.NewService(cron.Options{
		Clock: a.Clock, Logger: log, Store: store, Runs: cron.NewRunLog(a.Paths.CronRuns()),
		Handler: handler, Notify: fh.Notify, Channels: channels,
		MaxSleep: cc.MaxSleep.D(), ClaimTTL: cc.ClaimTTL.D(), JobTimeout: cc.JobTimeout.D(),
		MaxConcurrent: cc.MaxConcurrent, DecayAfter: cc.DecayAfter,
		UserRespondedSince: func(channel, chatID string, t time.Time) bool {
			at, ok := a.Sessions.LastUserMessageAt(a.ctx, spine.ConversationKey(channel, chatID))
			return ok && at.After(t)
		},
		ServiceLock: CronServiceLock(a.Paths),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: cron service: %w", err)
	}
	a.Cron = svc
	return svc, store, nil
}

// recordCronFire couples a cron fire to the Sentinel's ledger: the topic is
// marked fired (so no nudge repeats it within the dedup window) and a
// dispatched record marked neutral is written, which keeps a user-scheduled
// reminder from moving the acceptance rate the Sentinel learns from.
func (a *App) recordCronFire(ctx context.Context, topic, content string) error {
	if a.Sentinel == nil {
		return nil
	}
	if err := a.Sentinel.Policy.RecordCronFire(ctx, topic, content); err != nil {
		return err
	}
	if a.Sentinel.Feedback != nil {
		id := fmt.Sprintf("cron-%s-%d", topic, a.Clock.Now().UnixNano())
		return a.Sentinel.Feedback.RecordDispatched(ctx, feedback.Record{NudgeID: id, Topic: topic, Action: "cron", Source: feedback.SourceCron})
	}
	return nil
}
