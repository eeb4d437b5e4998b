package sentinel

import (
	"context"
	"testing"
)

// A decision with a malformed priority and score is kept, lowered to low
// and 0, and goes through the shipped policy like any other.
func TestSystemKeepsDecisionWithMalformedPriorityAndScore(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	h.prov.push(`{"action":"nudge","reason":"bins go out tonight","priority":"URGENT!!","proactivity_score":"very","nudge_message":"The bins go out tonight.","target_session":"telegram:42"}`)
	out := h.sys.Runner.TickOnce(context.Background())
	if !out.Delivered() || out.Decision.Priority != PriorityLow || out.Decision.ProactivityScore != 0 {
		t.Fatalf("decision %+v delivered=%v", out.Decision, out.Delivered())
	}
	recs, _ := h.sys.Feedback.Nudges(1)
	if len(recs) != 1 || recs[0].Priority != "low" {
		t.Fatalf("%+v", recs)
	}
}
