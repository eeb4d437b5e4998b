package sim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

var policySection = section{
	name:  "policy",
	title: "The policy at work — denials by layer, and a preference learned from dismissals",
	blurb: "A week later. The planner keeps proposing nudges; the default NudgePolicy turns most of them " +
		"down, each time naming the layer that refused. Then the owner dismisses the same topic three times " +
		"and the preference learner writes sentinel/preferences.json: from then on that topic is denied " +
		"by the preferences layer, before any quota is even looked at.",
	run: runPolicy,
}

// policyStep is one planner proposal and what the default policy must say.
type policyStep struct {
	day, hh, mm int
	action      string
	topic, msg  string
	reason      string
	layer       string // "" = delivered
	dismiss     string // the owner's words when they dismiss it
	ownerBefore string // the owner says this a few minutes before
}

func runPolicy(ctx context.Context, e *env) error {
	const (
		keys       = "Spare keys: the locksmith on Mill Lane is open until 18:00 today."
		newsletter = "newsletter"
	)
	steps := []policyStep{
		{day: 7, hh: 9, mm: 0, topic: newsletter, msg: "Your newsletter draft is due Friday — want an outline?", reason: "deadline in MEMORY.md", dismiss: "not now"},
		{day: 7, hh: 9, mm: 40, topic: "keys", msg: keys, reason: "the owner lost a key last week", layer: policy.LayerDismissalCooldown},
		{day: 7, hh: 11, mm: 10, topic: "keys", msg: keys, reason: "the owner lost a key last week"},
		{day: 7, hh: 11, mm: 15, topic: "bins", msg: "The bins go out tonight.", reason: "collection day", layer: policy.LayerSessionCooldown},
		{day: 7, hh: 11, mm: 35, topic: "car", msg: "The car's MOT is due next week.", reason: "date in the notes"},
		{day: 7, hh: 11, mm: 58, topic: "plants", msg: "The balcony plants need water.", reason: "dry week", layer: policy.LayerHourQuota},
		{day: 7, hh: 13, mm: 0, topic: "keys", msg: keys, reason: "still no spare key", layer: policy.LayerDedup},
		{day: 7, hh: 22, mm: 45, action: "nudge_defer", topic: "dentist", msg: "The dentist still needs your answer about Friday 15:00.",
			reason: "the owner is chatting; after the thread", ownerBefore: "Remind me what's on tomorrow?", layer: policy.LayerQuietHours},
		{day: 8, hh: 10, mm: 0, topic: newsletter, msg: "Newsletter: shall I collect this week's links for the draft?", reason: "deadline Friday", dismiss: "no"},
		{day: 10, hh: 11, mm: 0, topic: newsletter, msg: "Newsletter: the draft is due tomorrow.", reason: "deadline tomorrow", dismiss: "stop reminding me about the newsletter"},
		{day: 11, hh: 15, mm: 0, topic: newsletter, msg: "Newsletter: the draft is due today at 17:00.", reason: "deadline today", layer: policy.LayerPreferences},
	}
	var planner []llm.Turn
	for _, st := range steps {
		action := st.action
		if action == "" {
			action = "nudge"
		}
		var extra map[string]any
		if action == "nudge_defer" {
			extra = map[string]any{"defer_condition": "after the current thread settles"}
		}
		planner = append(planner, nudgeDecision(action, st.topic, st.msg, st.reason, extra))
	}
	model := llm.NewScripted([]llm.Turn{
		{Content: "Morning! Here if you need me."},
		{Content: "Tomorrow: the bank at 11:00 and Sam's birthday."},
	})
	rt, err := e.newRuntime(ctx, build{model: model, planner: llm.NewScripted(planner)})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	sys := rt.Sentinel()
	s := &sentinelRun{e: e, rt: rt, sys: sys, fb: sys.FeedbackTool()}
	e.clk.Set(at(7, 8, 55))
	if _, err := e.turn(ctx, rt, "Morning!"); err != nil {
		return err
	}
	var layers []string
	learnedNoted := false
	for _, st := range steps {
		if st.ownerBefore != "" {
			e.clk.Set(at(st.day, st.hh, st.mm).Add(-5 * time.Minute))
			if _, err := e.turn(ctx, rt, st.ownerBefore); err != nil {
				return err
			}
		}
		e.clk.Set(at(st.day, st.hh, st.mm))
		if st.layer == policy.LayerPreferences && !learnedNoted {
			return fmt.Errorf("the preference learner wrote nothing before %s", stamp(e.clk.Now()))
		}
		out := s.tick(ctx)
		if st.action == "nudge_defer" {
			if out.Result == nil || !out.Result.Queued {
				return fmt.Errorf("%s: defer not queued: %+v", stamp(e.clk.Now()), out)
			}
			// The owner goes quiet; the thread settles after the quiet hours began.
			e.clk.Set(at(st.day, 23, 5))
			s.pollDefer(ctx)
			if len(s.deferred) != 1 || s.deferred[0].Verdict.Allow || s.deferred[0].Verdict.Layer != st.layer {
				return fmt.Errorf("%s: deferred nudge not denied by %s: %+v", stamp(e.clk.Now()), st.layer, s.deferred)
			}
			layers = append(layers, st.layer)
			continue
		}
		if st.layer == "" {
			if !out.Delivered() {
				return fmt.Errorf("%s: nudge %q not delivered: %+v", stamp(e.clk.Now()), st.topic, out)
			}
		} else {
			if out.Verdict == nil || out.Verdict.Allow || out.Verdict.Layer != st.layer {
				return fmt.Errorf("%s: nudge %q not denied by %s: %+v", stamp(e.clk.Now()), st.topic, st.layer, out)
			}
			layers = append(layers, st.layer)
		}
		if st.dismiss == "" {
			continue
		}
		e.clk.Advance(2 * time.Minute)
		if err := s.feedback(ctx, out.NudgeID, feedback.EventDismissed, st.dismiss); err != nil {
			return err
		}
		if noted, err := notePreferences(e); err != nil {
			return err
		} else if noted {
			learnedNoted = true
		}
	}
	e.emit(Event{Kind: "policy.layers", Label: "policy", Text: fmt.Sprintf("%d proposals denied by %d different layers: %s", len(layers), len(uniq(layers)), strings.Join(uniq(layers), ", ")),
		Why:  "one gate for every proactive path; a denial is recorded with its layer (raven sentinel explain shows the same)",
		Data: map[string]any{"layers": uniq(layers)}})
	return nil
}

// notePreferences prints preferences.json once the learner has written it.
func notePreferences(e *env) (bool, error) {
	data, err := os.ReadFile(e.paths.Preferences())
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ov, err := policy.ReadPreferences(e.paths.Preferences())
	if err != nil {
		return false, fmt.Errorf("preferences.json as learned: %w", err)
	}
	if len(ov.MutedTopics) == 0 {
		return false, fmt.Errorf("preferences.json learned something other than a muted topic: %s", data)
	}
	e.emit(Event{Kind: "preferences.learned", Label: "learner", Text: "sentinel/preferences.json ← " + strings.Join(strings.Fields(string(data)), " "),
		Why: "three dismissals of one topic in 14 days (and ≥75% of its verdicts) make it a muted topic; the learner only tightens, " +
			"and `raven sentinel prefs unset` undoes it",
		Data: map[string]any{"muted_topics": ov.MutedTopics, "content": string(data)}})
	return true, nil
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
