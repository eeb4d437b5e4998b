package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

func TestPreferenceSetIsStrictAndTightenOnly(t *testing.T) {
	c := DefaultConfig()
	tests := []struct {
		key, value string
		want       error
		check      func(o Overrides) bool
	}{
		{key: "day_quota", value: "3", check: func(o Overrides) bool { return *o.DayQuota == 3 }},
		{key: "day_quota", value: "7", want: ErrLoosen},
		{key: "day_quota", value: "-1", want: ErrBadPreference},
		{key: "day_quota", value: "two", want: ErrBadPreference},
		{key: "session_cooldown", value: "1h", check: func(o Overrides) bool { return time.Duration(*o.SessionCooldown) == time.Hour }},
		{key: "session_cooldown", value: "5m", want: ErrLoosen},
		{key: "dedup_window", value: "soon", want: ErrBadPreference},
		{key: "weekend_factor", value: "0.25", check: func(o Overrides) bool { return *o.WeekendFactor == 0.25 }},
		{key: "weekend_factor", value: "0.9", want: ErrLoosen},
		{key: "quiet_hours", value: "21:30-07:00", check: func(o Overrides) bool { return o.QuietHours.String() == "21:30-07:00" }},
		{key: "quiet_hours", value: "22:00", want: ErrBadPreference},
		{key: "quiet_hours", value: "22:00-22:00", want: ErrBadPreference},
		{key: "dnd", value: "12:00-13:00, 18:00-19:00", check: func(o Overrides) bool { return len(o.DND) == 2 && o.DND[1].String() == "18:00-19:00" }},
		{key: "muted_topics", value: "Crypto-Prices,football", check: func(o Overrides) bool {
			return strings.Join(o.MutedTopics, ",") == "crypto-prices,football"
		}},
		{key: "loudness", value: "3", want: ErrUnknownPreference},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			var o Overrides
			err := o.Set(c, tc.key, tc.value)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.key) {
					t.Fatalf("err %v, want %v naming the key", err, tc.want)
				}
				return
			}
			if err != nil || !tc.check(o) {
				t.Fatalf("err %v, overrides %+v", err, o)
			}
			if was, err := o.Unset(tc.key); err != nil || !was {
				t.Fatalf("unset: %v %v", was, err)
			}
			if was, _ := o.Unset(tc.key); was {
				t.Fatal("unset twice reported set")
			}
		})
	}
}

func TestUpdatePreferencesAtomicAndRefusesCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sentinel", "preferences.json")
	ctx := context.Background()
	c := DefaultConfig()
	if _, err := UpdatePreferences(ctx, path, func(o *Overrides) (bool, error) { return true, o.Set(c, "day_quota", "4") }); err != nil {
		t.Fatal(err)
	}
	o, err := ReadPreferences(path)
	if err != nil || o.DayQuota == nil || *o.DayQuota != 4 {
		t.Fatalf("%+v %v", o, err)
	}
	// What the writer wrote, the policy's own reader reads.
	if r := NewPreferencesReader(path, nil).Overrides(); r.DayQuota == nil || *r.DayQuota != 4 {
		t.Fatalf("reader %+v", r)
	}
	// A failing edit writes nothing.
	if _, err := UpdatePreferences(ctx, path, func(o *Overrides) (bool, error) { return true, o.Set(c, "day_quota", "99") }); !errors.Is(err, ErrLoosen) {
		t.Fatal(err)
	}
	if o, _ := ReadPreferences(path); *o.DayQuota != 4 {
		t.Fatal("a refused edit was written")
	}
	if err := os.WriteFile(path, []byte(`{"day_quota": "two"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = UpdatePreferences(ctx, path, func(o *Overrides) (bool, error) { return true, nil })
	var pe *PreferencesError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"day_quota": "two"}` {
		t.Fatalf("corrupt file rewritten: %s", b)
	}
	if o, err := ReadPreferences(filepath.Join(t.TempDir(), "none.json")); err != nil || o.DayQuota != nil {
		t.Fatalf("missing file: %+v %v", o, err)
	}
}

func TestMutedTopicLayer(t *testing.T) {
	c := DefaultConfig()
	c.Location = time.UTC
	ov := Overrides{MutedTopics: []string{"standup"}}
	p, err := New(c, Options{Overrides: func() Overrides { return ov }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []Request{
		{Action: ActionNudge, Content: "Reminder: stand-up in 5 minutes"},
		{Action: ActionInject, Content: "anything", Topic: "standup"},
	} {
		if v := p.Check(ctx, req); v.Allow || v.Layer != LayerPreferences {
			t.Errorf("%+v: %+v", req, v)
		}
	}
	if v := p.Check(ctx, Request{Action: ActionNudge, Content: "Pay the rent."}); !v.Allow {
		t.Errorf("unmuted topic denied: %+v", v)
	}
}

// The muted-topic layer sits on Check's allow path: it must not allocate.
func BenchmarkCheckAllowWithMutedTopics(b *testing.B) {
	c := DefaultConfig()
	c.Location = time.UTC
	c.DayQuota, c.HourQuota = 1<<30, 1<<30
	ov := Overrides{MutedTopics: []string{"crypto-prices", "football", "standup", "weather", "news"}}
	p, err := New(c, Options{Overrides: func() Overrides { return ov }, Clock: clock.NewFake(time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := Request{Action: ActionNudge, SessionKey: "telegram:1", Content: "Your parcel from the post office is ready for pickup."}
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Check(ctx, req); !v.Allow {
			b.Fatal(v)
		}
	}
}
