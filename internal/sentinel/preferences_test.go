package sentinel

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// Dismissing the 22:00 nudge three evenings running teaches a preference:
// preferences.json gains quiet hours from 22:00, and the shipped policy
// then denies a 22:00 nudge at its quiet-hours layer — the preference, not
// the ledger's own learned do-not-disturb, which comes later in the order.
func TestLearnedQuietHourFromRepeatedDismissals(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	ctx := context.Background()
	subjects := []string{"the library books", "the gym bag", "the recycling"}
	for day, subject := range subjects {
		h.clk.Set(time.Date(2025, 3, 4+day, 22, 0, 0, 0, time.UTC))
		h.prov.push(decisionJSON("nudge", "Pack "+subject+" for tomorrow.", map[string]any{"target_session": "telegram:42"}))
		out := h.sys.Runner.TickOnce(ctx)
		if !out.Delivered() {
			t.Fatalf("day %d: nudge not delivered: %+v", day, out.Verdict)
		}
		h.clk.Advance(5 * time.Minute)
		if _, err := h.sys.RecordVerdict(ctx, out.NudgeID, feedback.EventDismissed, "telegram:42", "not now"); err != nil {
			t.Fatal(err)
		}
	}
	ov, err := policy.ReadPreferences(h.paths.Preferences)
	if err != nil {
		t.Fatal(err)
	}
	if ov.QuietHours == nil || ov.QuietHours.String() != "22:00-07:00" {
		t.Fatalf("learned preferences %+v, want quiet hours 22:00-07:00", ov)
	}
	h.clk.Set(time.Date(2025, 3, 7, 22, 10, 0, 0, time.UTC))
	// The tick does not even ask the planner: the policy state says quiet.
	h.prov.push(decisionJSON("nudge", "Water the balcony plants.", map[string]any{"target_session": "telegram:42"}))
	out := h.sys.Runner.TickOnce(ctx)
	if out.Delivered() || out.Route != RouteFastPathQuiet || !strings.Contains(out.Decision.Reason, "22:00-07:00") {
		t.Fatalf("22:10 tick: route %s, reason %q", out.Route, out.Decision.Reason)
	}
	v := h.sys.Policy.Check(ctx, policy.Request{Action: policy.ActionNudge, SessionKey: "telegram:42", Content: "Water the balcony plants.", Priority: policy.PriorityMedium})
	if v.Allow || v.Layer != policy.LayerQuietHours || !strings.Contains(v.Reason, "22:00-07:00") {
		t.Fatalf("22:10 nudge: %+v", v)
	}
}

// A topic the owner keeps dismissing is muted in preferences.json, and the
// policy denies it at its preferences layer while other topics still pass.
func TestLearnedMutedTopic(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	ctx := context.Background()
	for i := range 3 {
		h.clk.Set(time.Date(2025, 3, 4+2*i, 10+i, 0, 0, 0, time.UTC)) // different hours, days apart
		h.prov.push(decisionJSON("nudge", fmt.Sprintf("Crypto prices moved %d%% today.", 3+i), map[string]any{"target_session": "telegram:42", "topic": "crypto-prices"}))
		out := h.sys.Runner.TickOnce(ctx)
		if !out.Delivered() {
			t.Fatalf("nudge %d not delivered: %+v", i, out.Verdict)
		}
		if _, err := h.sys.RecordVerdict(ctx, out.NudgeID, feedback.EventDismissed, "telegram:42", ""); err != nil {
			t.Fatal(err)
		}
	}
	ov, err := policy.ReadPreferences(h.paths.Preferences)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.MutedTopics) != 1 || ov.MutedTopics[0] != "crypto-prices" || ov.QuietHours != nil || len(ov.DND) != 0 {
		t.Fatalf("learned %+v, want only crypto-prices muted", ov)
	}
	h.clk.Set(time.Date(2025, 3, 20, 15, 0, 0, 0, time.UTC))
	if v := h.sys.Policy.Check(ctx, policy.Request{Action: policy.ActionNudge, Content: "BTC is up.", Topic: "crypto-prices"}); v.Allow || v.Layer != policy.LayerPreferences {
		t.Fatalf("muted topic: %+v", v)
	}
	if v := h.sys.Policy.Check(ctx, policy.Request{Action: policy.ActionNudge, Content: "The dentist is at 16:00."}); !v.Allow {
		t.Fatalf("other topic: %+v", v)
	}
}

// The learner only adds: an hour away from quiet hours becomes a learned
// do-not-disturb window, a second run adds nothing, cron records and
// mixed verdicts teach nothing, and the owner's own entries stay.
func TestPreferenceLearnerUnit(t *testing.T) {
	dir := t.TempDir()
	clk := clockAt(time.Date(2025, 3, 20, 12, 0, 0, 0, time.UTC))
	tr := feedback.NewTracker(dir+"/feedback.jsonl", feedback.Options{Clock: clk})
	ctx := context.Background()
	add := func(id string, at time.Time, topic, source, verdict string) {
		t.Helper()
		if err := tr.Append(ctx, feedback.Record{Time: at, Event: feedback.EventDispatched, NudgeID: id, Topic: topic, Source: source}); err != nil {
			t.Fatal(err)
		}
		if err := tr.Append(ctx, feedback.Record{Time: at.Add(time.Minute), Event: verdict, NudgeID: id}); err != nil {
			t.Fatal(err)
		}
	}
	add("old", time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC), "ancient", feedback.SourceSentinel, feedback.EventDismissed)
	add("old2", time.Date(2025, 1, 2, 9, 0, 0, 0, time.UTC), "ancient", feedback.SourceSentinel, feedback.EventDismissed)
	add("old3", time.Date(2025, 1, 3, 9, 0, 0, 0, time.UTC), "ancient", feedback.SourceSentinel, feedback.EventDismissed)
	for d := range 3 {
		day := time.Date(2025, 3, 10+d, 0, 0, 0, 0, time.UTC)
		add(fmt.Sprintf("lunch-%d", d), day.Add(13*time.Hour), fmt.Sprintf("t%d", d), feedback.SourceSentinel, feedback.EventDismissed)
		add(fmt.Sprintf("cron-%d", d), day.Add(8*time.Hour), "standup", feedback.SourceCron, feedback.EventDismissed)
		add(fmt.Sprintf("mix-%d", d), day.Add(17*time.Hour), "gym", feedback.SourceSentinel, feedback.EventDismissed)
	}
	add("mix-ok", time.Date(2025, 3, 14, 17, 0, 0, 0, time.UTC), "gym", feedback.SourceSentinel, feedback.EventAccepted)
	add("mix-ok2", time.Date(2025, 3, 15, 17, 0, 0, 0, time.UTC), "gym", feedback.SourceSentinel, feedback.EventAccepted)
	path := dir + "/preferences.json"
	owner := policy.Overrides{MutedTopics: []string{"football"}}
	// The owner's own edit, a week before the dismissals.
	ownerEdit := func(at time.Time, fn func(o *policy.Overrides)) {
		t.Helper()
		if _, err := policy.UpdatePreferences(ctx, path, func(o *policy.Overrides) (bool, error) { fn(o); return true, nil }); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	ownerEdit(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC), func(o *policy.Overrides) { *o = owner })
	cfg := policy.DefaultConfig()
	cfg.Location = time.UTC
	l, err := NewPreferenceLearner(PreferenceLearnerOptions{Path: path, Feedback: tr, Policy: cfg, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Learn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.QuietHours != nil || len(got.DND) != 1 || got.DND[0].String() != "13:00-14:00" || got.DND[0].Name != LearnedWindowName || len(got.MutedTopics) != 0 {
		t.Fatalf("learned %+v", got)
	}
	again, err := l.Learn(ctx)
	if err != nil || !again.Empty() {
		t.Fatalf("second run learned %+v (%v)", again, err)
	}
	ov, _ := policy.ReadPreferences(path)
	if len(ov.MutedTopics) != 1 || ov.MutedTopics[0] != "football" || len(ov.DND) != 1 {
		t.Fatalf("file %+v", ov)
	}
	// The owner removes the learned window: the same dismissals do not
	// bring it back; three new ones do.
	ownerEdit(clk.Now(), func(o *policy.Overrides) { o.Unset(policy.PrefDND) })
	if got, err := l.Learn(ctx); err != nil || !got.Empty() {
		t.Fatalf("spent evidence learned again: %+v (%v)", got, err)
	}
	for d := range 3 {
		clk.Set(time.Date(2025, 3, 21+d, 13, 0, 0, 0, time.UTC))
		add(fmt.Sprintf("lunch-again-%d", d), clk.Now(), fmt.Sprintf("u%d", d), feedback.SourceSentinel, feedback.EventDismissed)
	}
	clk.Advance(time.Hour)
	if got, err := l.Learn(ctx); err != nil || len(got.DND) != 1 || got.DND[0].String() != "13:00-14:00" {
		t.Fatalf("new dismissals: %+v (%v)", got, err)
	}
}

func clockAt(t time.Time) *clock.Fake { return clock.NewFake(t) }
