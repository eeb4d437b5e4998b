package sentinel

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// defaultPolicy is the shipped policy, pinned to UTC so hours are stable.
func defaultPolicy(c *Config) {
	c.Policy = policy.DefaultConfig()
	c.Policy.Location = time.UTC
}

// A deadline slot the planner already delivered is not blind-fired again
// when the planner later goes down: naming the slot (slot_id) or its topic
// counts as acting on it. A slot_id that was not offered acts on nothing.
func TestDeadlineFallbackSkipsSlotThePlannerDelivered(t *testing.T) {
	tests := []struct {
		name     string
		extra    func(slotID string) map[string]any
		msg      string
		firstAt  int // minutes after 12:00 of the planner's nudge (default 65: inside the slot)
		resent   bool
		wantNote string
	}{
		{name: "slot_id", extra: func(id string) map[string]any { return map[string]any{"slot_id": id} }},
		{name: "slot topic", extra: func(id string) map[string]any { return map[string]any{"topic": id} }},
		// Before the slot opened the planner could not name it; its
		// nudge on the same topic (as the policy tags it) still counts.
		{name: "same topic before the window", extra: func(string) map[string]any { return nil }, msg: "Due today at 16:00: submit the tax return.", firstAt: 30},
		{name: "unknown slot_id", extra: func(string) map[string]any { return map[string]any{"slot_id": "deadline-nope"} }, resent: true, wantNote: "not offered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newSysHarness(t, defaultPolicy)
			ctx := context.Background()
			write(t, h.paths.Memory, "- 2025-03-04 16:00 submit the tax return\n")
			if tc.firstAt == 0 {
				tc.firstAt = 65
			}
			if tc.msg == "" {
				tc.msg = "The tax return is due at 16:00 — want me to pull the numbers together?"
			}
			h.clk.Set(time.Date(2025, 3, 4, 12, tc.firstAt, 0, 0, time.UTC))
			var slotID string
			for _, s := range h.sys.Plan.Slots(h.clk.Now()) {
				if s.Deadline && s.Priority == PriorityHigh {
					slotID = s.ID
				}
			}
			if slotID == "" {
				t.Fatal("no high-priority deadline slot planned")
			}
			h.prov.push(decisionJSON("nudge", tc.msg,
				mergeMaps(map[string]any{"target_session": "telegram:42", "priority": "high"}, tc.extra(slotID))))
			first := h.sys.Runner.TickOnce(ctx)
			if !first.Delivered() {
				t.Fatalf("planner nudge not delivered: %+v", first)
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(first.Notes, "; "), tc.wantNote) {
				t.Fatalf("notes %q lack %q", first.Notes, tc.wantNote)
			}
			// Later, inside the slot, the provider fails (script exhausted).
			h.clk.Set(time.Date(2025, 3, 4, 13, 45, 0, 0, time.UTC))
			second := h.sys.Runner.TickOnce(ctx)
			if got := second.Route == RouteDeadlineFallback && second.Delivered(); got != tc.resent {
				t.Fatalf("fallback resent=%v, want %v: %+v", got, tc.resent, second)
			}
			want := 1
			if tc.resent {
				want = 2
			}
			if n := h.postedN(); n != want {
				t.Fatalf("%d messages posted, want %d", n, want)
			}
		})
	}
}

func mergeMaps(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}
