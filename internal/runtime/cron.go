package runtime

import (
	"context"
	"path/filepath"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/spine"
)

// buildCron assembles the cron store, service and tool: turns through the
// scheduler when a model is configured (else verbatim delivery), targets
// from Resolve, owner activity from the session store resetting decay,
// fires coupled to the Sentinel's ledger, and the heartbeat woken after
// each fire. The service runs only with ServiceCron.
func (r *Runtime) buildCron(_ context.Context, o Options) error {
	cc := r.cfg.Cron
	log := r.log.With("component", "cron")
	r.cronStore = cron.NewStore(r.paths.CronJobs(), r.clk, log, cc.LockTimeout.D())
	var submit func(spine.TurnRequest) (*spine.Ticket, error)
	if r.provider != nil {
		submit = r.scheduler.Submit
	}
	fh := cron.NewFireHandler(cron.FireOptions{
		Hub: r.hub, Submit: submit, Forward: r.cfg.Channels.Forward,
		LastChatID: func(ch string) (string, bool) { return r.sessions.LastChatID(r.ctx, ch) },
		Resolve:    r.cronTargets,
		ResolveBroadcast: func() []cron.Target {
			return toCronTargets(r.ResolveAll())
		},
		RecordFire: r.recordCronFire,
		OnFired: func(jobID string) {
			r.emit("cron.fired", "cron:"+jobID, map[string]any{"job_id": jobID})
			r.wake.RequestWakeNow("cron " + jobID + " fired")
		},
		Logger: log,
	})
	handler := cron.Handler(fh.Handle)
	if o.WrapCronHandler != nil {
		handler = o.WrapCronHandler(handler)
	}
	svc, err := cron.NewService(cron.Options{
		Clock: r.clk, Logger: log, Store: r.cronStore, Runs: cron.NewRunLog(r.paths.CronRuns()),
		Handler: handler, Notify: fh.Notify, Channels: o.CronChannels,
		MaxSleep: cc.MaxSleep.D(), ClaimTTL: cc.ClaimTTL.D(), JobTimeout: cc.JobTimeout.D(),
		MaxConcurrent: cc.MaxConcurrent, DecayAfter: cc.DecayAfter,
		UserRespondedSince: func(channel, chatID string, t time.Time) bool {
			at, ok := r.sessions.LastUserMessageAt(r.ctx, spine.ConversationKey(channel, chatID))
			return ok && at.After(t)
		},
		ServiceLock: CronServiceLock(r.paths),
	})
	if err != nil {
		return err
	}
	r.cronSvc = svc
	r.toolReg.Register(cron.NewTool(r.cronStore, r.clk, svc.Poke))
	return nil
}

func (r *Runtime) cronTargets(channel, to string) []cron.Target {
	return toCronTargets(r.Resolve(channel, to))
}

func toCronTargets(ts []Target) []cron.Target {
	out := make([]cron.Target, len(ts))
	for i, t := range ts {
		out[i] = cron.Target{Channel: t.Channel, ChatID: t.ChatID}
	}
	return out
}

// FireCron fires job id once now, in this process (see
// cron.Service.FireRequested): `raven cron run` with no service running.
func (r *Runtime) FireCron(ctx context.Context, id string) (cron.Run, error) {
	return r.cronSvc.FireRequested(ctx, id)
}

// CronServiceLock is the lock a running cron service holds on the data dir;
// cron.ServiceRunning probes it.
func CronServiceLock(p config.Paths) string { return filepath.Join(p.CronDir(), "service.lock") }
