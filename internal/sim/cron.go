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
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

var cronSection = section{
	name:  "cron",
	title: "Cron morning — verbatim reminder, turns, a broadcast, decay, suppression, heartbeat",
	blurb: "Tuesday morning. Jobs the owner scheduled fire from cron/jobs.json through the real " +
		"timer loop (claim under a file lock, fire outside it, log to runs.jsonl). The owner's " +
		"phone is a telegram chat listed in channels.forward; the laptop terminal is attached as cli:direct.",
	run: runCron,
}

// demoDecayAfter is lowered from the default 12 so a job decays within the morning.
const demoDecayAfter = 3

const (
	vitaminMsg = "Take your vitamin D with breakfast."
	stretchMsg = "Remind me to stretch for ten minutes."
	// stretchNudge is the Sentinel's own idea on the same topic: no
	// explicit topic, so the policy derives it from the words, as it
	// derived the cron job's.
	stretchNudge = "Time to stretch for ten minutes?"
	todayNote    = "Today:\n- 11:00 call with the bank\n- pick up the parcel at the post office\n- Sam's birthday card\n"
	hbTask       = "- Every weekday around 10:00, read notes/today.md and tell me what is on it.\n"
)

func runCron(ctx context.Context, e *env) error {
	e.clk.Set(at(1, 6, 50))
	e.cfg.Channels.Forward = []string{"telegram:owner-phone"}
	e.cfg.Cron.DecayAfter = demoDecayAfter
	if err := runCronVerbatim(ctx, e); err != nil {
		return err
	}

	script := llm.NewScripted([]llm.Turn{
		{Content: "Morning! Ready when you are."},
		{Content: "Stretch break: ten minutes — neck rolls, shoulders, hips. Your back will thank you."},
		{Content: "Reminder for everyone: the bins go out tonight (recycling week)."},
		{Content: "Time for a glass of water."},
		{Content: "Another glass of water?"},
		{Content: "Water check: have a glass now."},
		// The heartbeat: phase one's decision, then phase two's agent turn.
		{ToolCalls: []llm.ToolCall{{Name: heartbeat.DecisionTool, Arguments: jsonArgs(map[string]any{
			"action": "run", "tasks": "Read notes/today.md and tell the owner what is on it.", "reason": "weekday, 10:00: the morning summary is due"})}}},
		{ToolCalls: []llm.ToolCall{{Name: "read_file", Arguments: jsonArgs(map[string]any{"path": "notes/today.md"})}}},
		{Content: "Your Tuesday: 11:00 call with the bank, the parcel at the post office, and Sam's birthday card."},
	})
	planner := llm.NewScripted([]llm.Turn{decision(map[string]any{"action": "nudge", "reason": "the owner sits for hours on weekday mornings",
		"proactivity_score": 0.6, "priority": "low", "target_session": owner, "nudge_message": stretchNudge})})
	fired := make(chan string, 16)
	rt, err := e.newRuntime(ctx, build{model: script, planner: planner, services: runtime.ServiceCron, real: []string{"telegram"},
		wrapCron: func(h cron.Handler) cron.Handler {
			return func(ctx context.Context, job cron.Job, at time.Time) (cron.Outcome, error) {
				out, err := h(ctx, job, at)
				fired <- fmt.Sprintf("%s|%s|%v", job.Name, out.Status, err)
				return out, err
			}
		}})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	if _, err := e.turn(ctx, rt, "Morning!"); err != nil {
		return err
	}
	specs := []cron.Spec{
		{Name: "stretch", Message: stretchMsg, Cron: "30 7 * * 1-5", TZ: "UTC", Deliver: true, Channel: "cli", To: "direct"},
		{Name: "bins", Message: "Tell the household the bins go out tonight.", Cron: "0 8 * * 2", TZ: "UTC", Deliver: true, Broadcast: true},
	}
	for _, sp := range specs {
		if _, err := addJob(ctx, e, rt, sp); err != nil {
			return err
		}
	}
	rt.Cron().Poke()

	// Each fire: jump the clock, then poke the loop so it re-reads the time
	// even if it was between ticks when the clock moved.
	fireAt := func(t time.Time, why string) error {
		e.hold()
		e.clk.Set(t)
		rt.Cron().Poke()
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
			return settled(ctx, rt, parts[0])
		case <-ctx.Done():
			e.release()
			return fmt.Errorf("waiting for a cron fire at %s: %w", stamp(t), ctx.Err())
		}
	}
	if err := fireAt(at(1, 7, 30), "weekday 07:30 schedule; a CRON turn on conversation cron:<id>, reply sent to cli:direct"); err != nil {
		return err
	}

	// 07:45 — the Sentinel wants to say the same thing: the fire covers it.
	e.clk.Set(at(1, 7, 45))
	if a, b := policy.DeriveTopic(stretchMsg), policy.DeriveTopic(stretchNudge); a != b {
		return fmt.Errorf("demo script: topics %q and %q differ", a, b)
	}
	s := &sentinelRun{e: e, rt: rt, sys: rt.Sentinel()}
	out := s.tick(ctx)
	if out.Verdict == nil || out.Verdict.Allow || out.Verdict.Layer != policy.LayerDedup || !strings.Contains(out.Verdict.Reason, "cron job covered") {
		return fmt.Errorf("07:45 same-topic nudge not suppressed by the cron fire: %+v", out)
	}
	e.emit(Event{Kind: "cron.suppressed", Label: "policy", Text: fmt.Sprintf("topic %q: the 07:30 cron fire suppresses the Sentinel's nudge", policy.DeriveTopic(stretchMsg)),
		Why:  "a fire writes the shared policy ledger under the topic the Sentinel derives from the words (not the job's name), so the owner is not told twice",
		Data: map[string]any{"topic": policy.DeriveTopic(stretchMsg), "layer": policy.LayerDedup}})

	if err := fireAt(at(1, 8, 0), "broadcast: the turn runs on the job's own channel, then its reply goes to every owner surface (cli + forwarded telegram)"); err != nil {
		return err
	}
	e.clk.Set(at(1, 8, 5))
	if _, err := addJob(ctx, e, rt, cron.Spec{Name: "water", Message: "Remind me to drink a glass of water.", Every: "30m", Deliver: true, Channel: "cli", To: "direct"}); err != nil {
		return err
	}
	rt.Cron().Poke()
	for _, t := range []time.Time{at(1, 8, 35), at(1, 9, 5), at(1, 9, 35)} {
		why := fmt.Sprintf("every 30m; the owner does not reply, and after %d unanswered fires in a row the job decays (demo setting; default %d)",
			demoDecayAfter, cron.DefaultDecayAfter)
		if err := fireAt(t, why); err != nil {
			return err
		}
	}
	if _, err := e.expect(ctx, "the water job's decay notice", func(m spine.Message) bool { return m.Extras["cron_notice"] == true }); err != nil {
		return errors.New("the water job did not auto-decay")
	}
	jobs, err := rt.CronStore().Jobs(ctx)
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
	return runHeartbeat(ctx, e, rt, script)
}

// settled waits until the service has recorded job name's fire (its claim
// cleared): the next clock jump must not find the claim still held, or a
// jump past the claim TTL would read it as a dead process's and fire the
// slot again. The service offers no completion hook, so this polls the
// store, bounded by the step timeout.
func settled(ctx context.Context, rt *runtime.Runtime, name string) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		jobs, err := rt.CronStore().Jobs(ctx)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.Name == name && j.Claim == nil {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the fire of %q to be recorded: %w", name, ctx.Err())
		}
	}
}

// runCronVerbatim is `raven cron run` in a process with no model: a
// delivering job's message goes out exactly as the owner wrote it.
func runCronVerbatim(ctx context.Context, e *env) error {
	e.tl.note("06:50 — a process that runs no model (as `raven cron serve` beside nothing): reminders go out verbatim.")
	rt, err := e.newRuntime(ctx, build{noModel: true, real: []string{"telegram"}})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	detach, err := e.attach(ctx, rt, owner, nil)
	if err != nil {
		return err
	}
	defer detach()
	j, err := addJob(ctx, e, rt, cron.Spec{Name: "vitamins", Message: vitaminMsg, Cron: "55 6 * * *", TZ: "UTC", Deliver: true, Channel: "cli", To: "direct"})
	if err != nil {
		return err
	}
	e.clk.Set(at(1, 6, 55))
	e.hold()
	run, err := rt.FireCron(ctx, j.ID)
	ev := Event{Kind: "cron.fired", Label: "cron", Text: fmt.Sprintf("fired %q → %s (no model: verbatim)", j.Name, run.Outcome),
		Why:  "with no model a delivering job posts its own message; nothing is paraphrased, nothing is skipped",
		Data: map[string]any{"job": j.Name, "status": string(run.Outcome), "verbatim": true}}
	e.emit(ev)
	e.release()
	if err != nil {
		return err
	}
	m, err := e.expect(ctx, "the verbatim reminder", func(m spine.Message) bool { return m.Origin == spine.OriginCron })
	if err != nil {
		return err
	}
	if m.Content != vitaminMsg {
		return fmt.Errorf("the reminder was %q, not the job's message verbatim", m.Content)
	}
	// The job is the owner's for every day; this process is done with it.
	if err := rt.CronStore().Remove(ctx, j.ID); err != nil {
		return err
	}
	return rt.Close(ctx)
}

func addJob(ctx context.Context, e *env, rt *runtime.Runtime, sp cron.Spec) (cron.Job, error) {
	j, err := cron.NewJob(sp, e.clk.Now())
	if err != nil {
		return j, err
	}
	if j, err = rt.CronStore().Add(ctx, j); err != nil {
		return j, err
	}
	e.emit(Event{Kind: "cron.added", Label: "cron", Text: fmt.Sprintf("job %q (%s): %s → %s", j.Name, j.Schedule.String(), quote(j.Message), deliveryOf(sp)),
		Data: map[string]any{"job_id": j.ID, "name": j.Name}})
	return j, nil
}

// runHeartbeat shows both heartbeat routes: a template-only HEARTBEAT.md
// costs no model call; a real task runs through the agent loop and its
// result reaches the owner.
func runHeartbeat(ctx context.Context, e *env, rt *runtime.Runtime, script *llm.Scripted) error {
	if err := os.MkdirAll(filepath.Dir(e.paths.Heartbeat()), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(e.paths.Heartbeat(), []byte(heartbeat.Template), 0o600); err != nil {
		return err
	}
	// Woken early by the cron completions.
	wctx, cancel := context.WithTimeout(ctx, e.step)
	w, err := rt.Wake().Wait(wctx, e.cfg.Heartbeat.Interval.D())
	cancel()
	if err != nil {
		return err
	}
	e.emit(Event{Kind: "wake.fired", Label: "wake", Text: fmt.Sprintf("%s wake: %d requests coalesced into one heartbeat run", w.Kind, w.Requests),
		Why:  "cron completions ask for an early heartbeat; requests made before it fires merge, and a rate guard spaces fires",
		Data: map[string]any{"kind": string(w.Kind), "requests": w.Requests, "reasons": w.Reasons}})
	calls := len(script.Requests())
	out, err := rt.Heartbeat().TickOnce(ctx)
	if err != nil {
		return err
	}
	if out.ModelCalled || len(script.Requests()) != calls {
		return errors.New("the heartbeat called the model for a template-only HEARTBEAT.md")
	}
	e.emit(Event{Kind: "heartbeat.tick", Label: "heartbeat", Text: fmt.Sprintf("HEARTBEAT.md has no tasks (route %s) → nothing sent, no model call", out.Route),
		Why:  "an empty or template-only task list costs nothing, and no “all clear” ever reaches the owner",
		Data: map[string]any{"route": string(out.Route), "model_called": out.ModelCalled}})

	// 10:00 — the owner has added a real task.
	e.clk.Set(at(1, 10, 0))
	tasks := strings.Replace(heartbeat.Template, "- (add a task here)\n", hbTask, 1)
	if err := os.WriteFile(e.paths.Heartbeat(), []byte(tasks), 0o600); err != nil {
		return err
	}
	notes := filepath.Join(rt.Workspace().Root(), "notes")
	if err := os.MkdirAll(notes, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(notes, "today.md"), []byte(todayNote), 0o600); err != nil {
		return err
	}
	e.emit(Event{Kind: "heartbeat.task", Label: "owner", Text: "HEARTBEAT.md task added: " + quote(strings.TrimPrefix(strings.TrimSpace(hbTask), "- "))})
	e.hold()
	out, err = rt.Heartbeat().TickOnce(ctx)
	if err != nil {
		e.release()
		return err
	}
	e.emit(Event{Kind: "heartbeat.run", Label: "heartbeat", Text: fmt.Sprintf("route %s → the agent loop did the task; delivered to %d target(s)", out.Route, len(out.Delivered)),
		Why:  "phase one asked the model through a virtual tool whether a task is due; phase two ran it as a HEARTBEAT turn, its reply sent where the resolver says",
		Data: map[string]any{"route": string(out.Route), "model_called": out.ModelCalled, "delivered": len(out.Delivered)}})
	e.release()
	if out.Route != heartbeat.RouteRun || len(out.Delivered) != 1 {
		return fmt.Errorf("the heartbeat task's result was not delivered: %+v", out)
	}
	if _, err := e.expect(ctx, "the heartbeat's result", func(m spine.Message) bool { return strings.Contains(m.Content, "Your Tuesday") }); err != nil {
		return err
	}
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
