package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/wake"
)

var cronSection = section{
	name:  "cron",
	title: "Cron morning — reminders, a broadcast, auto-decay, heartbeat, wake",
	blurb: "Tuesday morning. Jobs the owner scheduled fire from cron/jobs.json through the real " +
		"timer loop (claim under a file lock, fire outside it, log to runs.jsonl). The owner's " +
		"phone is a telegram chat that ephemeral cli deliveries are forwarded to.",
	run: runCron,
}

// demoDecayAfter is lowered from the default 12 so a job decays within the morning.
const demoDecayAfter = 3

func runCron(ctx context.Context, e *env) error {
	e.clk.Set(at(1, 6, 58))
	e.cfg.Channels.Forward = []string{"telegram:owner-phone"}
	script := llm.NewScripted([]llm.Turn{
		{Content: "Morning! Ready when you are."},
		{Content: "Stretch break: ten minutes — neck rolls, shoulders, hips. Your back will thank you."},
		{Content: "Reminder for everyone: the bins go out tonight (recycling week)."},
		{Content: "Time for a glass of water."},
		{Content: "Another glass of water?"},
		{Content: "Water check: have a glass now."},
	})
	app, err := e.newApp(ctx, script, "cli", "telegram")
	if err != nil {
		return err
	}
	if _, err := e.turn(ctx, app, "Morning!"); err != nil {
		return err
	}

	wk := wake.New(wake.Options{Clock: e.clk, Logger: e.log, MinInterval: e.cfg.Heartbeat.Interval.D() / 6, Busy: app.Scheduler.UserBusy})
	store := cron.NewStore(e.paths.CronJobs(), e.clk, e.log, e.cfg.Cron.LockTimeout.D())
	fired := make(chan string, 16)
	notices := make(chan string, 4)
	fh := cron.NewFireHandler(cron.FireOptions{
		Hub: app.Hub, Submit: app.Scheduler.Submit, Forward: e.cfg.Channels.Forward,
		LastChatID: func(ch string) (string, bool) { return app.Sessions.LastChatID(ctx, ch) },
		OnFired:    func(id string) { wk.RequestWakeNow("cron job " + id + " finished") },
		Logger:     e.log,
	})
	svc, err := cron.NewService(cron.Options{
		Clock: e.clk, Logger: e.log, Store: store, Runs: cron.NewRunLog(e.paths.CronRuns()),
		Handler: func(ctx context.Context, job cron.Job, at time.Time) (cron.Outcome, error) {
			out, err := fh.Handle(ctx, job, at)
			msg := fmt.Sprintf("%s|%s|%v", job.Name, out.Status, err)
			fired <- msg
			return out, err
		},
		Notify: func(ctx context.Context, job cron.Job, text string) {
			fh.Notify(ctx, job, text)
			notices <- job.Name
		},
		MaxSleep: e.cfg.Cron.MaxSleep.D(), ClaimTTL: e.cfg.Cron.ClaimTTL.D(), JobTimeout: e.cfg.Cron.JobTimeout.D(),
		MaxConcurrent: 1, DecayAfter: demoDecayAfter,
	})
	if err != nil {
		return err
	}
	specs := []cron.Spec{
		{Name: "stretch", Message: "Remind me to stretch for ten minutes.", Cron: "30 7 * * 1-5", TZ: "UTC", Deliver: true, Channel: "cli", To: "direct"},
		{Name: "bins", Message: "Tell the household the bins go out tonight.", Cron: "0 8 * * 2", TZ: "UTC", Deliver: true, Broadcast: true},
		{Name: "water", Message: "Remind me to drink a glass of water.", Every: "30m", Deliver: true, Channel: "cli", To: "direct"},
	}
	for _, sp := range specs {
		j, err := cron.NewJob(sp, e.clk.Now())
		if err != nil {
			return err
		}
		if j, err = store.Add(ctx, j); err != nil {
			return err
		}
		e.emit(Event{Kind: "cron.added", Label: "cron", Text: fmt.Sprintf("job %q (%s): %s → %s", j.Name, j.Schedule.String(), quote(j.Message), deliveryOf(sp)),
			Data: map[string]any{"job_id": j.ID, "name": j.Name}})
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	stopped := false
	stopSvc := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stop()
		return <-done
	}
	defer stopSvc()

	// Each fire: jump the clock, then poke the loop so it re-reads the time
	// even if it was between ticks when the clock moved.
	fireAt := func(t time.Time, why string) error {
		e.hold()
		e.clk.Set(t)
		svc.Poke()
		ctx, cancel := context.WithTimeout(ctx, e.step)
		defer cancel()
		select {
		case f := <-fired:
			parts := strings.SplitN(f, "|", 3)
			ev := Event{Kind: "cron.fired", Label: "cron", Text: fmt.Sprintf("fired %q → %s", parts[0], parts[1]), Why: why,
				Data: map[string]any{"job": parts[0], "status": parts[1]}}
			if parts[2] != "<nil>" {
				ev.Text += " (" + parts[2] + ")"
			}
			e.emit(ev)
			e.release()
			if parts[1] != string(cron.StatusDelivered) {
				return fmt.Errorf("cron job %s: %s %s", parts[0], parts[1], parts[2])
			}
			return nil
		case <-ctx.Done():
			e.release()
			return fmt.Errorf("waiting for a cron fire at %s: %w", stamp(t), ctx.Err())
		}
	}
	if err := fireAt(at(1, 7, 30), "weekday 07:30 schedule; a CRON turn on conversation cron:<id>, reply sent to cli:direct"); err != nil {
		return err
	}
	if err := fireAt(at(1, 8, 0), "broadcast: the turn runs on the job's own channel, then its reply goes to every owner surface (cli + forwarded telegram)"); err != nil {
		return err
	}
	for _, t := range []time.Time{at(1, 8, 30), at(1, 9, 0), at(1, 9, 30)} {
		why := fmt.Sprintf("every 30m; the owner does not reply, and after %d unanswered fires in a row the job decays (demo setting; default %d)",
			demoDecayAfter, e.cfg.Cron.DecayAfter)
		if err := fireAt(t, why); err != nil {
			return err
		}
	}
	select {
	case name := <-notices:
		_ = name
	case <-time.After(e.step):
		return errors.New("the water job did not auto-decay")
	}
	jobs, err := store.Jobs(ctx)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Name == "water" {
			if j.Enabled {
				return errors.New("the water job is still enabled after its decay notice")
			}
			e.emit(Event{Kind: "cron.decayed", Label: "cron", Text: fmt.Sprintf("job %q disabled: %s", j.Name, j.DisabledReason),
				Why:  "a recurring reminder nobody answers is noise; the owner was told and can re-enable it",
				Data: map[string]any{"job_id": j.ID, "reason": j.DisabledReason}})
		}
	}
	if err := stopSvc(); err != nil {
		return err
	}

	// The heartbeat: woken early by the cron completions, it finds nothing.
	if err := os.MkdirAll(filepath.Dir(e.paths.Heartbeat()), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(e.paths.Heartbeat(), []byte(heartbeat.Template), 0o600); err != nil {
		return err
	}
	hbModel := llm.NewScripted(nil)
	hbo := runtime.HeartbeatOptions(e.paths, e.cfg)
	hbo.Provider, hbo.Submit, hbo.Post, hbo.Waiter, hbo.Clock, hbo.Logger = hbModel, app.Scheduler.Submit, app.Hub.Post, wk, e.clk, e.log
	hb, err := heartbeat.New(hbo)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, e.step)
	w, err := wk.Wait(wctx, hbo.Interval)
	cancel()
	if err != nil {
		return err
	}
	e.emit(Event{Kind: "wake.fired", Label: "wake", Text: fmt.Sprintf("%s wake: %d requests coalesced into one heartbeat run", w.Kind, w.Requests),
		Why:  "cron completions ask for an early heartbeat; requests made before it fires merge, and a rate guard spaces fires",
		Data: map[string]any{"kind": string(w.Kind), "requests": w.Requests, "reasons": w.Reasons}})
	out, err := hb.TickOnce(ctx)
	if err != nil {
		return err
	}
	if out.ModelCalled || len(hbModel.Requests()) != 0 {
		return errors.New("the heartbeat called the model for a template-only HEARTBEAT.md")
	}
	e.emit(Event{Kind: "heartbeat.tick", Label: "heartbeat", Text: fmt.Sprintf("HEARTBEAT.md has no tasks (route %s) → nothing sent, no model call", out.Route),
		Why:  "an empty or template-only task list costs nothing, and no “all clear” ever reaches the owner",
		Data: map[string]any{"route": string(out.Route), "model_called": out.ModelCalled}})
	return nil
}

func deliveryOf(sp cron.Spec) string {
	switch {
	case sp.Broadcast:
		return "broadcast"
	case sp.Silent:
		return "silent"
	}
	return sp.Channel + ":" + sp.To
}
