package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

// checkTime is a Wednesday morning, outside quiet hours.
var checkTime = time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)

type harness struct {
	t   *testing.T
	clk *clock.Fake
	p   *Policy
	ids int
}

func newHarness(t *testing.T, mod func(*Config), opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewFake(checkTime.Add(-30 * 24 * time.Hour))}
	cfg := DefaultConfig()
	cfg.Location = time.UTC
	if mod != nil {
		mod(&cfg)
	}
	opts.Clock = h.clk
	if opts.NewID == nil {
		opts.NewID = func() string { h.ids++; return fmt.Sprintf("n-%d", h.ids) }
	}
	p, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	return h
}

// at moves the clock to checkTime+d (d is usually negative; calls must go forward).
func (h *harness) at(d time.Duration) { h.clk.Set(checkTime.Add(d)) }

func (h *harness) fire(d time.Duration, req Request) string {
	h.t.Helper()
	h.at(d)
	id, err := h.p.RecordFired(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

func (h *harness) outcome(d time.Duration, ref, verdict string) {
	h.t.Helper()
	h.at(d)
	if err := h.p.RecordOutcome(context.Background(), ref, verdict); err != nil {
		h.t.Fatal(err)
	}
}

func nudge(session, topic, content string) Request {
	return Request{Action: ActionNudge, SessionKey: session, Topic: topic, Content: content}
}

func TestCheckLayers(t *testing.T) {
	base := nudge("telegram:1", "tax", "File the tax return")
	tests := []struct {
		name     string
		mod      func(*Config)
		setup    func(h *harness)
		at       time.Duration
		req      Request
		wantLow  string // "" = allowed
		wantHigh string
	}{
		{name: "allow", req: base},
		{name: "1 skip action", req: Request{Action: ActionSkip, Content: "x"}, wantLow: LayerAction, wantHigh: LayerAction},
		{name: "1 empty action", req: Request{Content: "x"}, wantLow: LayerAction, wantHigh: LayerAction},
		{name: "2 quiet hours", at: 13*time.Hour + 30*time.Minute, req: base, wantLow: LayerQuietHours},
		{name: "2 quiet hours early morning", at: -4 * time.Hour, req: base, wantLow: LayerQuietHours},
		{name: "2 quiet hours edge 07:00 open", at: -3 * time.Hour, req: base},
		{
			name: "2 quiet bypass withdrawn when high acceptance low", at: 13*time.Hour + 30*time.Minute, req: base,
			setup: func(h *harness) {
				for i := 0; i < 5; i++ {
					d := -time.Duration(10-i) * 24 * time.Hour
					id := h.fire(d, Request{Action: ActionNudge, Priority: PriorityHigh, Topic: fmt.Sprintf("t%d", i), Content: fmt.Sprint("c", i)})
					h.outcome(d+time.Minute, id, VerdictDismissed)
				}
			},
			wantLow: LayerQuietHours, wantHigh: LayerQuietHours,
		},
		{
			name: "2b learned DND hour", at: 0, req: base,
			setup: func(h *harness) {
				for i := 0; i < 3; i++ {
					d := -time.Duration(3-i)*24*time.Hour + 5*time.Minute
					id := h.fire(d, nudge("s", fmt.Sprintf("other%d", i), fmt.Sprint("other ", i)))
					h.outcome(d+time.Minute, id, VerdictDismissed)
				}
			},
			wantLow: LayerLearnedDND,
		},
		{
			name: "2b learned DND needs enough samples", at: 0, req: base,
			setup: func(h *harness) {
				id := h.fire(-24*time.Hour, nudge("s", "other", "other"))
				h.outcome(-24*time.Hour+time.Minute, id, VerdictDismissed)
			},
		},
		{
			name: "3 persona DND", at: 2*time.Hour + 30*time.Minute, req: base,
			mod:     func(c *Config) { c.PersonaDND = []DayWindow{{Name: "lunch", Start: 12 * 60, End: 13 * 60}} },
			wantLow: LayerPersonaDND,
		},
		{
			name: "3 persona DND other weekday", at: 2*time.Hour + 30*time.Minute, req: base,
			mod: func(c *Config) {
				c.PersonaDND = []DayWindow{{Name: "lunch", Start: 12 * 60, End: 13 * 60, Days: []time.Weekday{time.Monday}}}
			},
		},
		{
			name: "4 day quota hard cap", req: base,
			mod: func(c *Config) { c.DayQuota = 2 },
			setup: func(h *harness) {
				h.fire(-2*time.Hour, nudge("a", "x1", "one"))
				h.fire(-90*time.Minute, nudge("b", "x2", "two"))
			},
			wantLow: LayerDayQuota, wantHigh: LayerDayQuota,
		},
		{
			name: "4 day quota resets at midnight", req: base,
			mod:   func(c *Config) { c.DayQuota = 1 },
			setup: func(h *harness) { h.fire(-11*time.Hour, nudge("a", "x1", "yesterday")) },
		},
		{
			name: "5 hour quota", req: base,
			mod:     func(c *Config) { c.HourQuota = 1 },
			setup:   func(h *harness) { h.fire(-10*time.Minute, nudge("other", "x1", "one")) },
			wantLow: LayerHourQuota,
		},
		{
			name: "5 hour quota is rolling", req: base,
			mod:   func(c *Config) { c.HourQuota = 1 },
			setup: func(h *harness) { h.fire(-61*time.Minute, nudge("other", "x1", "one")) },
		},
		{
			name: "6 session cooldown", req: base,
			setup:   func(h *harness) { h.fire(-5*time.Minute, nudge("telegram:1", "x1", "one")) },
			wantLow: LayerSessionCooldown, wantHigh: LayerSessionCooldown,
		},
		{
			name: "6 session cooldown other session", req: base,
			setup: func(h *harness) { h.fire(-5*time.Minute, nudge("telegram:2", "x1", "one")) },
		},
		{
			name: "7 dismissal cooldown", req: base,
			setup: func(h *harness) {
				id := h.fire(-40*time.Minute, nudge("other", "x1", "one"))
				h.outcome(-30*time.Minute, id, VerdictDismissed)
			},
			wantLow: LayerDismissalCooldown, wantHigh: LayerDismissalCooldown,
		},
		{
			name: "8 topic reject cooldown", req: base,
			setup: func(h *harness) {
				id := h.fire(-4*time.Hour, nudge("other", "tax", "taxes?"))
				h.outcome(-3*time.Hour, id, VerdictDismissed)
			},
			wantLow: LayerTopicReject, wantHigh: LayerTopicReject,
		},
		{
			name: "8 topic reject weights below threshold", req: base,
			setup: func(h *harness) {
				id := h.fire(-4*time.Hour, nudge("other", "tax", "taxes?"))
				h.outcome(-3*time.Hour, id, VerdictNeutral) // weight 0.25 < 1
			},
		},
		{
			name: "8 topic reject cooldown expired", req: base,
			setup: func(h *harness) {
				id := h.fire(-50*time.Hour, nudge("other", "tax", "taxes?"))
				h.outcome(-49*time.Hour, id, VerdictDismissed) // 1 × 24h cooldown
			},
		},
		{
			name: "9 topic acceptance gate", req: base,
			mod: func(c *Config) { c.TopicRejectThreshold = 100 },
			setup: func(h *harness) {
				for i := 0; i < 4; i++ {
					d := -time.Duration(20-i)*24*time.Hour - 7*time.Hour // fired at 03:00
					id := h.fire(d, nudge("other", "tax", fmt.Sprint("tax ", i)))
					v := VerdictDismissed
					if i == 0 {
						v = VerdictNeutral
					}
					h.outcome(d+time.Minute, id, v)
				}
				id := h.fire(-15*24*time.Hour, nudge("other", "tax", "tax 9"))
				h.outcome(-15*24*time.Hour+time.Minute, id, VerdictDismissed)
			},
			wantLow: LayerTopicAcceptance, wantHigh: LayerTopicAcceptance,
		},
		{
			name: "9 topic acceptance gate passes good topic", req: base,
			mod: func(c *Config) { c.TopicRejectThreshold = 100 },
			setup: func(h *harness) {
				for i := 0; i < 4; i++ {
					d := -time.Duration(20-i)*24*time.Hour - 7*time.Hour
					id := h.fire(d, nudge("other", "tax", fmt.Sprint("tax ", i)))
					h.outcome(d+time.Minute, id, VerdictAccepted)
				}
			},
		},
		{
			name: "10 dedup same content", req: nudge("telegram:1", "", "File the tax return!"),
			mod:     func(c *Config) { c.TopicHourQuota, c.TopicDayQuota = 9, 9 },
			setup:   func(h *harness) { h.fire(-time.Hour, nudge("other", "different", "file THE tax  return")) },
			wantLow: LayerDedup, wantHigh: LayerDedup,
		},
		{
			name: "10 dedup window expired", req: base,
			setup: func(h *harness) { h.fire(-7*time.Hour, nudge("other", "different", "File the tax return")) },
		},
		{
			name: "11 topic hour quota", req: base,
			setup:   func(h *harness) { h.fire(-30*time.Minute, nudge("other", "tax", "a different message")) },
			wantLow: LayerTopicQuota, wantHigh: LayerTopicQuota,
		},
		{
			name: "11 topic day quota", req: base,
			setup: func(h *harness) {
				h.fire(-9*time.Hour, nudge("a", "tax", "m1"))
				h.fire(-5*time.Hour, nudge("b", "tax", "m2"))
			},
			wantLow: LayerTopicQuota, wantHigh: LayerTopicQuota,
		},
		{
			name: "11 topic week quota", req: base,
			mod: func(c *Config) { c.TopicWeekQuota = 2 },
			setup: func(h *harness) {
				h.fire(-5*24*time.Hour, nudge("a", "tax", "m1"))
				h.fire(-3*24*time.Hour, nudge("b", "tax", "m2"))
			},
			wantLow: LayerTopicQuota, wantHigh: LayerTopicQuota,
		},
	}
	for _, tc := range tests {
		for _, pr := range []Priority{PriorityLow, PriorityHigh} {
			want := tc.wantLow
			if pr == PriorityHigh {
				want = tc.wantHigh
			}
			t.Run(fmt.Sprintf("%s/%s", tc.name, pr), func(t *testing.T) {
				h := newHarness(t, tc.mod, Options{})
				if tc.setup != nil {
					tc.setup(h)
				}
				h.at(tc.at)
				req := tc.req
				req.Priority = pr
				v := h.p.Check(context.Background(), req)
				if v.Layer != want || v.Allow != (want == "") {
					t.Fatalf("got %+v, want layer %q", v, want)
				}
				if !v.Allow && v.Reason == "" {
					t.Fatal("denial without a reason")
				}
			})
		}
	}
}

func TestCheckChargesNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DayQuota = 1 }, Options{})
	h.at(0)
	req := nudge("s", "tax", "File taxes")
	for i := 0; i < 50; i++ {
		if v := h.p.Check(context.Background(), req); !v.Allow {
			t.Fatalf("check %d denied: %+v", i, v)
		}
	}
	if s := h.p.SnapshotState(); s.DayUsed != 0 || s.DayLeft != 1 {
		t.Fatalf("Check charged the quota: %+v", s)
	}
	// Delivery failed: nothing recorded, still allowed.
	if v := h.p.Check(context.Background(), req); !v.Allow {
		t.Fatal(v)
	}
	h.fire(0, req)
	if v := h.p.Check(context.Background(), nudge("t", "other", "other")); v.Layer != LayerDayQuota {
		t.Fatalf("after RecordFired want day_quota, got %+v", v)
	}
}

func TestSpawnHasOwnQuotaLineButSharesDedup(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DayQuota = 1; c.SpawnDayQuota = 1 }, Options{})
	h.fire(-3*time.Hour, nudge("s", "a", "nudge content"))
	h.at(0)
	spawn := Request{Action: ActionSpawn, SessionKey: "s", Content: "compile the weekly digest"}
	if v := h.p.Check(context.Background(), spawn); !v.Allow {
		t.Fatalf("spawn must not use the nudge day quota: %+v", v)
	}
	h.fire(0, spawn)
	h.at(7 * time.Minute)
	if v := h.p.Check(context.Background(), Request{Action: ActionSpawn, Content: "Compile the weekly digest."}); v.Layer != LayerDayQuota {
		t.Fatalf("second spawn: %+v", v)
	}
	h2 := newHarness(t, nil, Options{})
	h2.fire(-time.Hour, Request{Action: ActionSpawn, Content: "compile the weekly digest"})
	h2.at(0)
	if v := h2.p.Check(context.Background(), Request{Action: ActionSpawn, Content: "compile the weekly digest"}); v.Layer != LayerDedup {
		t.Fatalf("spawn dedup: %+v", v)
	}
}

func TestWeekendFactor(t *testing.T) {
	for _, tc := range []struct {
		name string
		day  time.Duration
		want string
	}{
		{"wednesday two per hour", 0, ""},
		{"saturday halved", 3 * 24 * time.Hour, LayerHourQuota},
		{"sunday halved", 4 * 24 * time.Hour, LayerHourQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.HourQuota = 2 }, Options{})
			h.fire(tc.day-10*time.Minute, nudge("a", "x", "first"))
			h.at(tc.day)
			v := h.p.Check(context.Background(), nudge("b", "y", "second"))
			if v.Layer != tc.want {
				t.Fatalf("got %+v want %q", v, tc.want)
			}
			s := h.p.SnapshotState()
			if (tc.day != 0) != s.Weekend {
				t.Fatalf("weekend flag wrong: %+v", s)
			}
		})
	}
}

func TestNextMultiplier(t *testing.T) {
	a := DefaultConfig().Adaptive
	tests := []struct {
		name    string
		cur     float64
		rate    float64
		samples int
		want    float64
	}{
		{"too few samples to move", 1, 0, 4, 1},
		{"tighten at cold start stops at floor", 1, 0, 5, 0.75},
		{"tighten fully with volume", 1, 0, 20, 0.5},
		{"symmetric tighten", 1, 0.2, 20, 0.7},
		{"symmetric loosen", 1, 0.8, 20, 1.3},
		{"loosen needs more samples", 1, 1, 14, 1},
		{"loosen with enough samples", 1, 1, 15, 1.5},
		{"within hysteresis band holds", 1, 0.55, 50, 1},
		{"within band below holds", 1, 0.45, 50, 1},
		{"outside band moves", 1, 0.6, 50, 1.1},
		{"recovery from tight is loosening", 0.5, 0.5, 10, 0.5},
		{"recovery with volume", 0.5, 0.5, 15, 1},
		{"clamped at max", 1, 1, 100, 1.5},
		{"nan ignored", 1, nanRate(), 100, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextMultiplier(a, tc.cur, tc.rate, tc.samples); got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func nanRate() float64 { z := 0.0; return z / z }

func TestAdaptiveHysteresisNoFlapping(t *testing.T) {
	h := newHarness(t, nil, Options{})
	m := 1.0
	for i := 0; i < 20; i++ {
		rate := 0.46
		if i%2 == 1 {
			rate = 0.54
		}
		if got := h.p.ApplyAdaptiveTuning(rate, 40); got != m {
			t.Fatalf("tick %d flapped to %v", i, got)
		}
	}
}

func TestAdaptiveMultiplierScalesHourQuota(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HourQuota = 2 }, Options{})
	h.at(0)
	if got := h.p.ApplyAdaptiveTuning(1, 30); got != 1.5 {
		t.Fatalf("multiplier %v", got)
	}
	if s := h.p.SnapshotState(); s.HourQuota != 3 || s.Multiplier != 1.5 {
		t.Fatalf("snapshot %+v", s)
	}
	if got := h.p.ApplyAdaptiveTuning(0, 30); got != 0.5 {
		t.Fatalf("multiplier %v", got)
	}
	if s := h.p.SnapshotState(); s.HourQuota != 1 {
		t.Fatalf("tight hour quota %d", s.HourQuota)
	}
}

func intp(v int) *int                { return &v }
func durp(d time.Duration) *Duration { x := Duration(d); return &x }

func TestOverridesOnlyTighten(t *testing.T) {
	tests := []struct {
		name  string
		ov    Overrides
		at    time.Duration
		setup func(h *harness)
		want  string
	}{
		{"narrower quiet hours cannot open 23:30", Overrides{QuietHours: &DayWindow{Start: 0, End: 60}}, 13*time.Hour + 30*time.Minute, nil, LayerQuietHours},
		{"wider quiet hours deny 21:00", Overrides{QuietHours: &DayWindow{Start: 20 * 60, End: 8 * 60}}, 11 * time.Hour, nil, LayerQuietHours},
		{"larger day quota ignored", Overrides{DayQuota: intp(100)}, 0, func(h *harness) {
			for i := 0; i < 6; i++ {
				h.fire(-time.Duration(9-i)*time.Hour, nudge(fmt.Sprint("s", i), fmt.Sprint("t", i), fmt.Sprint("c", i)))
			}
		}, LayerDayQuota},
		{"smaller day quota applies", Overrides{DayQuota: intp(1)}, 0, func(h *harness) {
			h.fire(-5*time.Hour, nudge("a", "b", "c"))
		}, LayerDayQuota},
		{"shorter session cooldown ignored", Overrides{SessionCooldown: durp(time.Minute)}, 0, func(h *harness) {
			h.fire(-5*time.Minute, nudge("telegram:1", "b", "c"))
		}, LayerSessionCooldown},
		{"longer session cooldown applies", Overrides{SessionCooldown: durp(3 * time.Hour)}, 0, func(h *harness) {
			h.fire(-2*time.Hour, nudge("telegram:1", "b", "c"))
		}, LayerSessionCooldown},
		{"hour quota cap holds against loosened multiplier", Overrides{HourQuota: intp(1)}, 0, func(h *harness) {
			h.p.ApplyAdaptiveTuning(1, 100)
			h.fire(-10*time.Minute, nudge("a", "b", "c"))
		}, LayerHourQuota},
		{"extra DND window", Overrides{DND: []DayWindow{{Name: "focus", Start: 9 * 60, End: 11 * 60}}}, 0, nil, LayerPersonaDND},
		{"higher weekend factor ignored", Overrides{WeekendFactor: func() *float64 { f := 1.0; return &f }()}, 3 * 24 * time.Hour, func(h *harness) {
			h.fire(3*24*time.Hour-10*time.Minute, nudge("a", "b", "c"))
		}, LayerHourQuota},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov := tc.ov
			h := newHarness(t, nil, Options{Overrides: func() Overrides { return ov }})
			if tc.setup != nil {
				tc.setup(h)
			}
			h.at(tc.at)
			v := h.p.Check(context.Background(), nudge("telegram:1", "tax", "File taxes"))
			if v.Layer != tc.want {
				t.Fatalf("got %+v want %q", v, tc.want)
			}
		})
	}
}

func TestPreferencesReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "preferences.json")
	var logs bytes.Buffer
	r := NewPreferencesReader(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if o := r.Overrides(); o.DayQuota != nil {
		t.Fatal("missing file must mean no overrides")
	}
	write := func(s string, mt time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, mt, mt)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	write(`{"day_quota": 2, "quiet_hours": {"start": "21:00", "end": "08:00"}, "session_cooldown": "1h"}`, t0)
	o := r.Overrides()
	if o.DayQuota == nil || *o.DayQuota != 2 || o.QuietHours.Start != 21*60 || time.Duration(*o.SessionCooldown) != time.Hour {
		t.Fatalf("parsed %+v", o)
	}
	for i, bad := range []string{`{"day_quota": 2,`, `{"day_quota": -1}`, `{"dayquota": 1}`, `{"quiet_hours": {"start": "25:00"}}`} {
		write(bad, t0.Add(time.Duration(i+1)*time.Minute))
		logs.Reset()
		if o := r.Overrides(); o.DayQuota != nil || o.QuietHours != nil {
			t.Fatalf("malformed %q not ignored: %+v", bad, o)
		}
		if !strings.Contains(logs.String(), "level=WARN") {
			t.Fatalf("no warning for %q: %s", bad, logs.String())
		}
		logs.Reset()
		r.Overrides() // unchanged file: no re-read, no repeated warning
		if logs.Len() != 0 {
			t.Fatalf("re-read an unchanged file: %s", logs.String())
		}
	}
}

func TestMalformedPreferencesKeepDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "preferences.json")
	os.WriteFile(path, []byte(`{"quiet_hours": {"start": "00:00", "end": "00:01"}, "day_quota": 500, oops`), 0o600)
	r := NewPreferencesReader(path, nil)
	h := newHarness(t, nil, Options{Overrides: r.Overrides})
	h.at(13*time.Hour + 30*time.Minute)
	if v := h.p.Check(context.Background(), nudge("s", "t", "c")); v.Layer != LayerQuietHours {
		t.Fatalf("default quiet hours lost: %+v", v)
	}
}

func TestCronFireSuppressesTopic(t *testing.T) {
	h := newHarness(t, nil, Options{})
	h.at(-time.Hour)
	if err := h.p.RecordCronFire(context.Background(), "", "Reminder: water the plants"); err != nil {
		t.Fatal(err)
	}
	h.at(0)
	for _, req := range []Request{
		nudge("s", "", "Don't forget to water the plants"),     // derived topic matches
		nudge("s", DeriveTopic("water the plants"), "Plants?"), // explicit topic
	} {
		if v := h.p.Check(context.Background(), req); v.Layer != LayerDedup {
			t.Fatalf("cron topic not suppressed for %q: %+v", req.Content, v)
		}
	}
	if v := h.p.Check(context.Background(), nudge("s", "", "Call the dentist")); !v.Allow {
		t.Fatalf("unrelated topic denied: %+v", v)
	}
	s := h.p.SnapshotState()
	if s.DayUsed != 0 {
		t.Fatalf("cron fire charged the sentinel quota: %+v", s)
	}
	if fh := h.p.FireHistory()[DeriveTopic("water the plants")]; fh.CronFires != 1 {
		t.Fatalf("fire history: %+v", h.p.FireHistory())
	}
	h.at(7 * time.Hour)
	if v := h.p.Check(context.Background(), nudge("s", "", "Don't forget to water the plants")); !v.Allow {
		t.Fatalf("suppression must end with the dedup window: %+v", v)
	}
}

func TestDeriveTopicStable(t *testing.T) {
	a := DeriveTopic("Don't forget to submit the TAX report today!")
	b := DeriveTopic("tax report: submit it")
	if a != b || a != "report-submit-tax" {
		t.Fatalf("topics differ: %q vs %q", a, b)
	}
	if DeriveTopic("hi") != "general" {
		t.Fatal("empty topic must fall back to general")
	}
	if topicHash("", "submit the tax report") != hashString(a) {
		t.Fatal("derived topic hash differs from tag hash")
	}
}

func TestRecordOutcomeBadVerdictAndChangedMind(t *testing.T) {
	h := newHarness(t, nil, Options{})
	id := h.fire(-3*time.Hour, nudge("s", "tax", "c"))
	if err := h.p.RecordOutcome(context.Background(), id, "meh"); !errors.Is(err, ErrUnknownVerdict) {
		t.Fatalf("got %v", err)
	}
	h.outcome(-170*time.Minute, id, VerdictDismissed)
	h.outcome(-169*time.Minute, id, VerdictAccepted) // changed their mind
	fh := h.p.FireHistory()["tax"]
	if fh.Accepted != 1 || fh.Dismissed != 0 {
		t.Fatalf("verdict counted twice: %+v", fh)
	}
}

func TestFireHistory(t *testing.T) {
	h := newHarness(t, nil, Options{})
	id := h.fire(-5*time.Hour, nudge("s", "gym", "Gym time"))
	h.outcome(-4*time.Hour, id, VerdictDismissed)
	h.fire(-2*time.Hour, nudge("s", "tax", "taxes"))
	h.at(0)
	fh := h.p.FireHistory()
	if len(fh) != 2 || fh["gym"].Dismissed != 1 || fh["gym"].FiresLastWeek != 1 || fh["tax"].LastFired.IsZero() {
		t.Fatalf("%+v", fh)
	}
	if l := TopicsByRecency(fh); l[0].Topic != "tax" {
		t.Fatalf("order %+v", l)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DayQuota = -1
	cfg.WeekendFactor = 2
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "day_quota") || !strings.Contains(err.Error(), "weekend_factor") {
		t.Fatalf("got %v", err)
	}
}

func TestDayWindow(t *testing.T) {
	w := DayWindow{Start: 23 * 60, End: 7 * 60, Days: []time.Weekday{time.Friday}}
	fri := time.Date(2025, 3, 14, 23, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want bool
	}{
		{fri, true},
		{fri.Add(7 * time.Hour), true},    // Saturday 06:30, opened Friday
		{fri.Add(-24 * time.Hour), false}, // Thursday night
		{fri.Add(8 * time.Hour), false},
	} {
		if got := w.Contains(tc.t); got != tc.want {
			t.Errorf("%v: got %v", tc.t, got)
		}
	}
}

func TestPersistsAcrossRestartAndCorruptState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sentinel", "state.json")
	var logs bytes.Buffer
	clk := clock.NewFake(checkTime)
	open := func() *Policy {
		st, err := statefile.Open(path, statefile.Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Location = time.UTC
		p, err := New(cfg, Options{Clock: clk, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := open()
	if _, err := p1.RecordFired(context.Background(), nudge("s", "tax", "File taxes")); err != nil {
		t.Fatal(err)
	}
	p2 := open()
	if v := p2.Check(context.Background(), nudge("other", "", "file taxes")); v.Layer != LayerDedup {
		t.Fatalf("restart lost the ledger: %+v", v)
	}
	os.WriteFile(path, []byte("{garbage"), 0o600)
	v := p2.Check(context.Background(), nudge("x", "y", "z"))
	if v.Allow || v.Layer != LayerState || !strings.Contains(v.Reason, "corrupt") {
		t.Fatalf("corrupt state must fail closed once: %+v", v)
	}
	// Moved aside; in-memory ledger survives and is written back on the next fire.
	if v := p2.Check(context.Background(), nudge("other", "", "file taxes")); v.Layer != LayerDedup {
		t.Fatalf("in-memory ledger dropped after corrupt file: %+v", v)
	}
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("corrupt file not moved aside: %v", matches)
	}
}

// A cron job's message and the planner's rephrasing of it share a tag: a
// relative time says when, not what, and a hyphenated word is one keyword.
func TestDeriveTopicRephrasings(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"Stand-up in 5", "Reminder: stand-up in 5 minutes", "standup"},
		{"standup in 10 mins", "Stand-up in 5", "standup"},
		{"Follow-up with Anna in 2 hours", "follow-up with anna", "anna-followup"},
		{"pay rent - today", "Pay rent", "pay-rent"},
	}
	for _, tc := range tests {
		if a, b := DeriveTopic(tc.a), DeriveTopic(tc.b); a != tc.want || b != tc.want {
			t.Errorf("DeriveTopic(%q) = %q, DeriveTopic(%q) = %q, want %q", tc.a, a, tc.b, b, tc.want)
		}
	}
}
