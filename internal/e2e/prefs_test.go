package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

type prefsShow struct {
	Exists      bool           `json:"exists"`
	Preferences map[string]any `json:"preferences"`
	Effective   []struct {
		Key        string `json:"key"`
		Configured string `json:"configured"`
		Preference string `json:"preference"`
		Effective  string `json:"effective"`
	} `json:"effective"`
}

func (e *Env) prefs() prefsShow {
	e.T.Helper()
	var p prefsShow
	e.MustRun("sentinel", "prefs", "--json").JSON(e.T, &p)
	return p
}

func (p prefsShow) effective(key string) string {
	for _, k := range p.Effective {
		if k.Key == key {
			return k.Effective
		}
	}
	return "?"
}

// §2.9: `raven sentinel prefs` shows, sets and unsets preferences
// (tighten-only), and the policy of the next tick follows them.
func TestSentinelPrefsShowSetUnset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(nil))
	e.PlanAlways(nudge("The tax return is due Friday.", map[string]any{"topic": "tax-return"}))
	if p := e.prefs(); p.Exists || p.effective("day_quota") != "6" {
		t.Fatalf("fresh prefs: %+v", p)
	}
	e.MustRun("sentinel", "prefs", "set", "muted_topics", "tax-return")
	e.MustRun("sentinel", "prefs", "set", "day_quota", "4")
	if r := e.Run("sentinel", "prefs", "set", "day_quota", "10"); r.Code != 2 || !strings.Contains(r.Stderr, "tighten") {
		t.Fatalf("a loosening preference was not refused: %s", r)
	}
	p := e.prefs()
	if !p.Exists || p.effective("muted_topics") != "tax-return" || p.effective("day_quota") != "4" {
		t.Fatalf("prefs after set: %+v", p)
	}
	if rec := e.Tick(); rec.Allowed == nil || *rec.Allowed || rec.Delivered || !strings.Contains(rec.VerdictReason, "tax-return") {
		t.Fatalf("a nudge on a muted topic: %s", rec)
	}
	e.MustRun("sentinel", "prefs", "unset", "muted_topics")
	if p := e.prefs(); p.effective("muted_topics") != "" || p.effective("day_quota") != "4" {
		t.Fatalf("prefs after unset: %+v", p)
	}
	if rec := e.Tick(); !rec.Delivered {
		t.Fatalf("the nudge after unmuting: %s", rec)
	}
	if st := e.MustRun("sentinel", "status").Stdout; !strings.Contains(st, "nudges left:  3 today (of 4)") {
		t.Fatalf("sentinel status does not follow the day_quota preference:\n%s", st)
	}
}

// §2.9: three dismissals (`raven nudges feedback`) of nudges sent at the
// current hour teach preferences.json a do-not-disturb window over that
// hour, and the next tick is denied by it. The scenario needs three
// nudges inside one hour: the hour quota is raised to 3 and the session
// cooldown turned off; the policy's own per-hour learned DND is off so
// the denial can only come from the learned preference.
func TestPreferenceLearnedFromDismissals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, midday.SentinelOptions(map[string]any{
		"sentinel.policy.hour_quota":       3,
		"sentinel.policy.session_cooldown": "0s",
		"sentinel.policy.learned_dnd":      false,
	}))
	topics := []string{"plants", "groceries", "laundry", "recycling"}
	var replies []map[string]any
	for _, tp := range topics {
		replies = append(replies, nudge("A note about the "+tp+".", map[string]any{"topic": tp}))
	}
	e.PlanSequence(Decision(replies[0]), Decision(replies[1]), Decision(replies[2]), Decision(replies[3]))
	e.MustRun("chat", "-m", "hello")
	var ids []string
	for i := range 3 {
		rec := e.Tick()
		if !rec.Delivered {
			t.Fatalf("nudge %d: %s", i+1, rec)
		}
		ids = append(ids, rec.NudgeID)
	}
	for _, id := range ids {
		e.MustRun("nudges", "feedback", id, "dismissed")
	}
	p := e.prefs()
	b, _ := json.Marshal(p.Preferences)
	if !p.Exists || !strings.Contains(string(b), `"learned"`) {
		t.Fatalf("preferences.json after three dismissals at this hour: %s", b)
	}
	rec := e.Tick()
	if rec.Allowed == nil || *rec.Allowed || rec.Layer != "persona_dnd" || !strings.Contains(rec.VerdictReason, "learned") {
		t.Fatalf("the tick after learning: %s (preferences %s)", rec, b)
	}
}
