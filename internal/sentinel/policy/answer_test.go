package policy

import (
	"context"
	"testing"
	"time"
)

// An answer (a menu pick) and an already-charged request (an inject
// riding its reply) skip exactly the layers their own or their menu's
// charge would trip, and no others.
func TestAnswerAndChargedLayers(t *testing.T) {
	menu := nudge("telegram:1", "task-discovery", "A few things I could do today")
	pick := Request{Action: ActionInject, SessionKey: "telegram:1", Topic: "task-discovery", Content: "Here is the draft", Answer: true}
	queued := Request{Action: ActionInject, SessionKey: "telegram:1", Topic: "passport", Content: "Passport office closes at 16:00"}
	charged := queued
	charged.Charged = true
	tests := []struct {
		name      string
		setup     func(h *harness)
		req       Request
		wantLayer string
	}{
		{"pick right after its menu", func(h *harness) { h.fire(-2*time.Minute, menu) }, pick, ""},
		{"same pick without the answer mark", func(h *harness) { h.fire(-2*time.Minute, menu) }, func() Request { r := pick; r.Answer = false; return r }(), LayerSessionCooldown},
		{"pick still pays the dedup", func(h *harness) {
			h.fire(-3*time.Hour, nudge("telegram:1", "x", "Here is the draft"))
		}, pick, LayerDedup},
		{"pick within a dismissal cooldown", func(h *harness) {
			id := h.fire(-30*time.Minute, nudge("telegram:9", "x", "something"))
			h.outcome(-20*time.Minute, id, VerdictDismissed)
		}, pick, LayerDismissalCooldown},
		{"charged inject rides despite its own charge", func(h *harness) { h.fire(-time.Minute, queued) }, charged, ""},
		{"uncharged copy is denied by that charge", func(h *harness) { h.fire(-time.Minute, queued) }, queued, LayerSessionCooldown},
		{"charged inject held by a later dismissal", func(h *harness) {
			h.fire(-time.Hour, queued)
			id := h.fire(-50*time.Minute, nudge("telegram:2", "y", "other"))
			h.outcome(-10*time.Minute, id, VerdictDismissed)
		}, charged, LayerDismissalCooldown},
		{"charged inject held by quiet hours", nil, charged, LayerQuietHours},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, Options{})
			if tc.setup != nil {
				tc.setup(h)
			}
			h.at(0)
			if tc.wantLayer == LayerQuietHours {
				h.at(13 * time.Hour) // 23:00
			}
			v := h.p.Check(context.Background(), tc.req)
			if v.Layer != tc.wantLayer || v.Allow != (tc.wantLayer == "") {
				t.Fatalf("verdict %+v, want layer %q", v, tc.wantLayer)
			}
		})
	}
}

// An answer's fire does not start a session cooldown or use its topic's
// quota: the next day's menus keep their topic quota.
func TestAnswerFiresSpareTopicAndSession(t *testing.T) {
	h := newHarness(t, nil, Options{})
	menu := nudge("telegram:1", "task-discovery", "Menu")
	for day := 4; day >= 1; day-- { // four menus fit the week quota (5); their twelve answers would not
		base := -time.Duration(day) * 24 * time.Hour
		h.at(base)
		if v := h.p.Check(context.Background(), func() Request { m := menu; m.Content = "Menu " + string(rune('a'+day)); return m }()); !v.Allow {
			t.Fatalf("day -%d menu denied: %+v", day, v)
		}
		h.fire(base, func() Request { m := menu; m.Content = "Menu " + string(rune('a'+day)); return m }())
		for i := range 3 {
			h.fire(base+time.Duration(i+1)*time.Minute, Request{Action: ActionInject, SessionKey: "telegram:1", Topic: "task-discovery", Content: "pick " + string(rune('a'+day*3+i)), Answer: true})
		}
	}
	h.fire(-time.Minute, Request{Action: ActionInject, SessionKey: "telegram:5", Topic: "task-discovery", Content: "a pick", Answer: true})
	h.at(0)
	if v := h.p.Check(context.Background(), nudge("telegram:5", "other", "fresh nudge")); !v.Allow {
		t.Fatalf("answers started a session cooldown or used a quota they should not: %+v", v)
	}
}
